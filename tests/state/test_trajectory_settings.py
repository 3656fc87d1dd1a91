"""What shapes a run's trajectory is recorded and compared at a resume.

Every declared setting is in one class below: refused when changed (it shaped
the saved state), compared (a change is a CHANGED header line), one of the
record's flags, a value the resume reports by its own check, or one that
shapes no update (with why). A new setting in none of them fails here, not
a user: declare it with `recorded=` beside its reader, or add it below with
its reason. Through the command line: a resume without --distortions says
so in the header and the record keeps it."""
import json
import os

from towertrain.config import settings
from towertrain.state import run_record
from towertrain.state.resume import contract

from helpers.cifar_files import write_dataset
from helpers.cli import run_cases

# Compared by a check of their own, with the reason.
OWN_CHECK = {
    **dict.fromkeys(("batch_size", "global_batch_size", "num_gpus", "device", "gpu_indices",
                     "worker_hosts", "task_index", "cluster_source", "slurm_port_base"),
                    "the topology: the checkpoint records the global batch, workers and "
                    "devices (Topology / Global batch lines)"),
    "variable_update": "the exchange: the same mean gradient in every mode; its effect on a "
                       "recipe's rate is the learning-rate comparison",
    **dict.fromkeys(("init_learning_rate", "piecewise_learning_rate_schedule",
                     "num_epochs_per_decay", "learning_rate_decay_factor",
                     "minimum_learning_rate", "learning_rate_schedule",
                     "num_learning_rate_warmup_epochs", "scale_learning_rate",
                     "base_batch_size", "num_examples_per_epoch"),
                    "compared as the rates they give (Learning rate: CHANGED at resume)"),
    "data_dir": "the training files' names and count are compared (training_input)",
    **dict.fromkeys(("num_batches", "num_epochs"), "the run's last step (Total steps line)"),
    "gradient_accumulation_steps": "the Accumulation line",
}
# Shape no update: where and how fast it runs, what it shows, writes or evaluates.
NO_UPDATE = {
    **dict.fromkeys(("data_format", "local_parameter_device", "all_reduce_spec",
                     "gradient_repacking", "gradient_pack_mb", "collective_implementation",
                     "staging_depth", "batch_group_size", "xla", "xla_compile",
                     "allow_emulated_precision", "single_l2_loss_op", "num_intra_threads",
                     "num_inter_threads", "mkl", "kmp_blocktime", "kmp_affinity",
                     "kmp_settings", "allow_growth", "sync_on_finish", "step_timeout_secs",
                     "collective_timeout_secs", "straggler_threshold",
                     "datasets_use_prefetch", "datasets_prefetch_buffer_size",
                     "datasets_num_private_threads", "datasets_use_caching",
                     "datasets_parallel_interleave_cycle_length",
                     "datasets_parallel_interleave_prefetch"),
                    "placement, layout, speed or pipeline tuning: the same updates"),
    **dict.fromkeys(("num_warmup_batches", "loss_type_to_report", "display_every",
                     "display_perf_ewma", "summary_verbosity", "save_summaries_steps",
                     "summary_dir", "print_training_accuracy", "trace_file", "trace_step",
                     "use_chrome_trace_format", "graph_file", "benchmark_log_dir",
                     "profile_steps", "verbose"),
                    "what the run shows and times (warmup steps train like the others)"),
    **dict.fromkeys(("forward_only", "train_dir", "checkpoint", "save_model_steps",
                     "save_model_secs", "max_ckpts_to_keep", "eval", "eval_batch_size",
                     "eval_during_training_every_n_steps",
                     "eval_during_training_every_n_epochs",
                     "eval_during_training_at_specified_steps",
                     "eval_during_training_at_specified_epochs", "stop_at_top_1_accuracy",
                     "num_eval_batches", "num_eval_epochs", "eval_interval_secs",
                     "eval_dir"),
                    "what the run writes or evaluates"),
}


def test_every_setting_is_recorded_compared_or_said_why_not():
    classes = {"refused": set(run_record.STATE_SETTINGS),
               "compared": set(run_record.COMPARED_SETTINGS),
               "record's flags": set(run_record.RECORDED_FLAGS),
               "own check": set(OWN_CHECK), "no update": set(NO_UPDATE)}
    names = {s.name for s in settings.SETTINGS}
    for name in sorted(names):
        homes = [label for label, members in classes.items() if name in members]
        assert len(homes) == 1, f"--{name}: in {homes or 'no class'}; see this module's doc"
    assert set().union(*classes.values()) == names  # no stale name below
    assert {"distortions", "tf_random_seed", "gradient_clip", "input"} <= classes["compared"]


def test_a_changed_compared_setting_is_one_changed_line_naming_each():
    record = {"distortions": True, "gradient_clip": 1.0, "tf_random_seed": 1234}
    now = {"distortions": False, "gradient_clip": 1.0, "tf_random_seed": 7}
    assert contract.compared_changes(record, now) == [(
        "Settings", "CHANGED at resume: --tf_random_seed=1234 in the run record, now "
        "--tf_random_seed=7; --distortions in the run record, now --nodistortions; from here "
        "it trains as another run would (pass the recorded values to go on as it was)")]
    assert contract.compared_changes(record, record) == []
    assert contract.compared_changes({}, now) == []  # an older record: not compared


def test_a_resume_without_distortions_says_so(tmp_path):
    data_dir = write_dataset(str(tmp_path / "cifar"), num_train=16, num_test=8)
    run = str(tmp_path / "run")
    common = ["--model=trivial", "--device=cpu", "--batch_size=4", "--num_warmup_batches=0",
              f"--data_dir={data_dir}", f"--train_dir={run}"]
    (code, _, err), (resumed, out, resume_err) = run_cases("train", [
        [*common, "--num_batches=2", "--distortions"], [*common, "--num_batches=3"]],
        tmp_path / "runs.json")
    assert (code, resumed) == (0, 0), err + resume_err
    assert ("Settings:    CHANGED at resume: --distortions in the run record, now "
            "--nodistortions;") in out, out
    with open(os.path.join(run, "towertrain_run.json")) as f:
        record = json.load(f)
    # The record now holds the resumed run's values, every compared one.
    assert set(run_record.COMPARED_SETTINGS) <= set(record) and record["distortions"] is False
