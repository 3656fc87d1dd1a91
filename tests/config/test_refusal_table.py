"""Every refusal, triggered through the command line (`python -m towertrain`'s
parser and main, in this process; nothing runs past the checks).

The table's completeness is checked against the code: every `fail(...)` and
`raise ParamsError/ClusterError(...)` in towertrain/config and towertrain/plan
(and each reason a flag parser raises as ValueError in config/*_checks.py)
is found by walking their syntax trees, and a site that no case below reaches
fails test_every_refusal_site_has_a_case, naming the site. Add a case for a
new refusal where it belongs; a site the command line cannot reach goes in
LIBRARY_CASES (through Params/Trainer) with the reason."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, ParamsError, Trainer
from towertrain.input_pipeline import from_arrays, from_dataset

from towertrain.config import flags as flags_lib

from helpers import refusals
from helpers.cifar_files import write_dataset

# tf.distribute's resolvers read these; each case sets its own.
CLUSTER_ENV = ("TF_CONFIG", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST",
               "SLURM_STEP_TASKS_PER_NODE")
TWO_WORKERS_TF_CONFIG = {"TF_CONFIG": json.dumps({
    "cluster": {"worker": ["127.0.0.1:7001", "127.0.0.1:7002"]},
    "task": {"type": "worker", "index": 0}})}
ONE_WORKER_TF_CONFIG = {"TF_CONFIG": json.dumps({
    "cluster": {"worker": ["127.0.0.1:7001"]}, "task": {"type": "worker", "index": 0}})}
TWO_SLURM_TASKS = {"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "2",
                   "SLURM_STEP_NODELIST": "127.0.0.1", "SLURM_STEP_TASKS_PER_NODE": "2"}
COLLECTIVE = "--variable_update=collective_all_reduce"
DATASETS_FLAGS = ["--datasets_use_prefetch", "--datasets_prefetch_buffer_size=2",
                  "--datasets_num_private_threads=1", "--datasets_use_caching",
                  "--datasets_parallel_interleave_cycle_length=2",
                  "--datasets_sloppy_parallel_interleave",
                  "--datasets_parallel_interleave_prefetch=2",
                  "--datasets_repeat_cached_sample"]


def _name(flag):
    return flag[2:].split("=")[0]


# docs/migration.md: --forward_only "trains nothing and writes nothing; refuses
# the flags only training reads". Written out here, not read from the code, so
# a flag dropped from the code's list still has its case.
FORWARD_ONLY_WRITERS = ("train_dir", "checkpoint", "eval", "eval_batch_size",
                        "summary_verbosity", "save_summaries_steps", "summary_dir",
                        "trace_file", "trace_step", "profile_steps", "print_training_accuracy",
                        "benchmark_log_dir", "graph_file", "eval_dir")
FORWARD_ONLY_READS = ("num_batches", "num_warmup_batches", "num_epochs", "display_every")


def _forward_only_refuses():
    """The flags --forward_only refuses: the training-only ones (settings'
    table) but those its timed loop reads, and every one that writes."""
    never_read = [n for n in flags_lib.TRAINING_ONLY if n not in FORWARD_ONLY_READS]
    return never_read + [n for n in FORWARD_ONLY_WRITERS if n not in never_read]


def _sample(name):
    """A command-line argument giving flag `name` some value absl parses."""
    flags_lib.define_flags()
    flag = flags_lib.FLAGS[name]
    if flag.flag_type() == "bool":
        return f"--{name}"
    choices = getattr(flag.parser, "enum_values", None)
    kind = flag.flag_type().split(" or ")[0]  # "float or auto": a float's
    value = choices[0] if choices else {"int": "1", "float": "1.0"}.get(kind, "x")
    return f"--{name}={value}"


# (command line, the error's start, words it contains, environment).
# {data}: a CIFAR-10 directory; {tmp}: a scratch directory.
E, NEEDS = None, "needs"
TF_CONFIG_OF = lambda config: {"TF_CONFIG": json.dumps(config)}  # noqa: E731
WORKERS = {"worker": ["127.0.0.1:7001", "127.0.0.1:7002"]}
CASES = [
    # --- towertrain/config/params.py
    (["--model=nope"], "--model=nope: ", "unknown model; known models: ", E),
    (["--batch_size=-1"], "--batch_size=-1: ", "must be >= 1 (it is the batch per device)", E),
    (["--global_batch_size=0"], "--global_batch_size=0: ", "must be >= 1", E),
    (["--straggler_threshold=-0.1"], "--straggler_threshold=-0.1: ",
     "must be >= 0 (0: no report)", E),
    (["--global_batch_size=8", "--batch_size=2", "--gradient_accumulation_steps=2"],
     "--global_batch_size=8: ", "conflicts with --batch_size=2 and "
     "--gradient_accumulation_steps=2 together", E),
    (["--global_batch_size=9", "--num_gpus=2"], "--global_batch_size=9: ",
     "does not divide over 1 worker x 2 devices (2)", E),
    (["--global_batch_size=8", "--num_gpus=2", "--batch_size=3"], "--global_batch_size=8: ",
     "not a multiple of --batch_size=3 x 1 worker x 2 devices (6)", E),
    (["--num_batches=-1"], "--num_batches=-1: ", "must be >= 1", E),
    (["--num_warmup_batches=-1"], "--num_warmup_batches=-1: ", "must be >= 0", E),
    (["--step_timeout_secs=-1"], "--step_timeout_secs=-1.0: ", "must be >= 0 seconds", E),
    (["--display_every=0"], "--display_every=0: ", "must be >= 1", E),
    (["--num_gpus=0"], "--num_gpus=0: ", "must be >= 1", E),
    (["--num_gpus=4097"], "--num_gpus=4097: ", "must be <= 4096 (towers of one process)", E),
    (["--batch_size=2147483648"], "--batch_size=2147483648: ",
     "must be <= 2147483647 (it is the batch per device)", E),
    (["--tf_random_seed=-1"], "--tf_random_seed=-1: ", "must be in 0 .. 4294967295", E),
    (["--display_every=9223372036854775808"], "--display_every=9223372036854775808: ",
     "out of range; an integer flag takes -9223372036854775808 .. 9223372036854775807", E),
    (["--init_learning_rate=-0.1"], "--init_learning_rate=-0.1: ", "must be > 0", E),
    (["--optimizer=momentum", "--momentum=1"], "--momentum=1.0: ", "must be in [0, 1)", E),
    (["--optimizer=momentum", "--momentum=-0.1"], "--momentum=-0.1: ", "must be in [0, 1)", E),
    (["--weight_decay=-0.001"], "--weight_decay=-0.001: ", "must be >= 0", E),
    (["--local_parameter_device=gpu"], "--local_parameter_device=gpu: ",
     "needs --device=gpu; with --device=cpu use --local_parameter_device=cpu", E),
    (["--data_dir={data}", "--staging_depth=-1"], "--staging_depth=-1: ", "must be >= 0", E),
    (["--num_examples_per_epoch=64", "--num_epochs=-1"], "--num_epochs=-1: ", "must be >= 1",
     E),
    (["--num_batches=5", "--num_epochs=2"], "--num_batches=5: ",
     "conflicts with --num_epochs=2, which sets the number of steps; drop one", E),
    (["--data_dir={tmp}/missing"], "--data_dir=", "missing: no such directory", E),
    (["--data_dir={data}/test_batch.bin"], "--data_dir=",
     "test_batch.bin: is a file, not a directory", E),
    (["--model=resnet-20"], "--model=resnet-20: ", "unknown model (did you mean resnet20?)", E),
    (["--input=queue"], "--input=queue: ", "needs --data_dir (synthetic data is generated on "
     "the devices)", E),
    (["--train_dir={tmp}", "--save_model_steps=-1"], "--save_model_steps=-1: ", "must be > 0",
     E),
    (["--train_dir={tmp}", "--save_model_secs=-5"], "--save_model_secs=-5.0: ", "must be > 0",
     E),
    (["--eval_during_training_every_n_steps=-1"], "--eval_during_training_every_n_steps=-1: ",
     "must be > 0", E),
    (["--train_dir={tmp}", "--max_ckpts_to_keep=0"], "--max_ckpts_to_keep=0: ", "must be >= 1",
     E),
    (["--save_model_steps=5"], "--save_model_steps=5: ", "needs --train_dir to save into", E),
    (["--save_model_secs=60"], "--save_model_secs=60.0: ", "needs --train_dir to save into", E),
    (["--eval"], "--eval=True: ", "needs --train_dir (latest checkpoint) or --checkpoint", E),
    (["--checkpoint={tmp}/ckpt-1"], "--checkpoint=", "needs --eval (the checkpoint to "
     "evaluate) or --train_dir (training resumes from this checkpoint of it)", E),
    (["--eval", "--checkpoint={data}/ckpt-1", "--train_dir={tmp}"], "--train_dir=",
     "--eval reads --checkpoint=", E),
    (["--checkpoint={data}/ckpt-1", "--train_dir={tmp}"], "--train_dir=",
     "is not in it: a run resumes from a checkpoint of its own --train_dir", E),
    (["--eval", "--train_dir={tmp}", "--eval_batch_size=-1"], "--eval_batch_size=-1: ",
     "must be >= 1", E),
    (["--eval", "--train_dir={tmp}", "--num_epochs=1"], "--num_epochs=1: ",
     "only applies to training; --eval ignores it", E),
    # The run has --num_warmup_batches + --num_batches steps: one past the last is refused.
    (["--num_warmup_batches=2", "--num_batches=3", "--eval_during_training_every_n_steps=6"],
     "--eval_during_training_every_n_steps=6: ", "no evaluation would run: the run has 5 "
     "steps (--num_warmup_batches + --num_batches)", E),
    # --- towertrain/config/flags.py (the command line's own checks)
    (["--eval", "--train_dir={tmp}", "--optimizer=sgd"], "--optimizer=sgd: ",
     "only applies to training; --eval ignores it", E),
    (["--eval", "--train_dir={tmp}", "--batch_size=8", "--eval_batch_size=4"],
     "--batch_size=8: ", "--eval uses --eval_batch_size=4 instead; drop one", E),
    *[([flag], flag + ": ", "only applies with --eval or "
       "--eval_during_training_every_n_steps", E)
      for flag in ("--eval_batch_size=4", "--num_eval_batches=2", "--num_eval_epochs=1.0")],
    (["--max_ckpts_to_keep=5"], "--max_ckpts_to_keep=5: ", "needs --train_dir", E),
    (["--input=dataset"], "--input=dataset: ", "needs --data_dir", E),
    (["--staging_depth=2"], "--staging_depth=2: ", "needs --data_dir", E),
    # --- towertrain/config/mode_checks.py (test_ignored_flags.py: every such flag)
    (["--momentum=0.9"], "--momentum=0.9: ", "only applies to --optimizer=momentum "
     "(got --optimizer=sgd)", E),
    # --- towertrain/config/recipe_checks.py
    *[(["--piecewise_learning_rate_schedule=" + text], "--piecewise_learning_rate_schedule=",
       words, E) for text, words in [
        ("0.1;5", "an odd number of ';'-separated numbers (got 2)"),
        ("0.1;x;0.01", "with numbers only"),
        ("0.1;5;0", "every learning rate must be > 0"),
        ("0.1;0;0.01", "the epoch boundaries must be > 0 and increasing"),
        ("0.1;5;0.01;5;0.001", "the epoch boundaries must be > 0 and increasing")]],
    *[(["--piecewise_learning_rate_schedule=0.1;5;0.01", f"--{other}"],
       "--piecewise_learning_rate_schedule=0.1;5;0.01: ", f"conflicts with --{shown}", E)
      for other, shown in [("init_learning_rate=0.1", "init_learning_rate=0.1"),
                           ("num_epochs_per_decay=2", "num_epochs_per_decay=2.0"),
                           ("learning_rate_decay_factor=0.5", "learning_rate_decay_factor=0.5"),
                           ("learning_rate_schedule=cosine", "learning_rate_schedule=cosine"),
                           ("minimum_learning_rate=0.001", "minimum_learning_rate=0.001")]],
    (["--learning_rate_schedule=cosine", "--num_epochs_per_decay=1",
      "--learning_rate_decay_factor=0.5"], "--learning_rate_schedule=cosine: ",
     "conflicts with --num_epochs_per_decay=1.0 (a staircase decay); drop one", E),
    (["--num_epochs_per_decay=1"], "--num_epochs_per_decay=1.0: ",
     "needs --learning_rate_decay_factor as well", E),
    (["--learning_rate_decay_factor=0.5"], "--learning_rate_decay_factor=0.5: ",
     "needs --num_epochs_per_decay as well", E),
    # 0 is tf_cnn_benchmarks' "unset" for these two (test_tfcnn_unset_defaults.py).
    (["--num_epochs_per_decay=-1", "--learning_rate_decay_factor=0.5"],
     "--num_epochs_per_decay=-1.0: ", "must be > 0", E),
    *[(["--num_epochs_per_decay=1", f"--learning_rate_decay_factor={factor}"],
       f"--learning_rate_decay_factor={float(factor)}: ", "must be in (0, 1]", E)
      for factor in ("-0.5", "1.001")],
    (["--minimum_learning_rate=-0.1"], "--minimum_learning_rate=-0.1: ", "must be >= 0", E),
    (["--minimum_learning_rate=0.01"], "--minimum_learning_rate=0.01: ",
     "only applies to a decaying schedule", E),
    (["--num_learning_rate_warmup_epochs=-1"], "--num_learning_rate_warmup_epochs=-1.0: ",
     "must be >= 0", E),
    (["--scale_learning_rate=linear"], "--scale_learning_rate=linear: ",
     "needs --base_batch_size", E),
    (["--scale_learning_rate=linear", "--base_batch_size=64", "--variable_update=independent"],
     "--scale_learning_rate=linear: ", "conflicts with --variable_update=independent", E),
    (["--scale_learning_rate=linear", "--base_batch_size=0"], "--base_batch_size=0: ",
     "must be >= 1", E),
    (["--num_examples_per_epoch=0"], "--num_examples_per_epoch=0: ", "must be >= 1", E),
    (["--num_examples_per_epoch=64", "--data_dir={data}"], "--num_examples_per_epoch=64: ",
     "conflicts with --data_dir=", E),
    # A global batch larger than the files' epoch (32 examples): no full batch, ever.
    (["--data_dir={data}", "--batch_size=33"], "--batch_size=33: ",
     "the global batch of 33 (33 per device x 1 device x 1 worker) is larger than the 32 "
     "examples of an epoch (the files in --data_dir)", E),
    *[([f"--optimizer={optimizer}", f"--{flag}={value}"], f"--{flag}={float(value)}: ",
       "must be in [0, 1)", E) for optimizer, flag in [
        ("rmsprop", "rmsprop_decay"), ("rmsprop", "rmsprop_momentum"),
        ("adam", "adam_beta1"), ("adam", "adam_beta2")] for value in ("1", "-0.1")],
    *[([f"--optimizer={optimizer}", f"--{optimizer}_epsilon=0"],
       f"--{optimizer}_epsilon=0.0: ", "must be > 0", E) for optimizer in ("rmsprop", "adam")],
    *[([f"--{flag}=0"], f"--{flag}=0.0: ", "must be > 0", E)
      for flag in ("gradient_clip", "global_norm_clip")],
    (["--sync_batch_norm", "--variable_update=independent"], "--sync_batch_norm=True: ",
     "needs one model trained by every tower", E),
    (["--sync_batch_norm", "--xla_compile"], "--sync_batch_norm=True: ",
     "conflicts with --xla_compile", E),
    (["--use_fp16", "--use_bf16"], "--use_fp16=True: ", "conflicts with --use_bf16", E),
    (["--use_fp16", "--fp16_loss_scale=0"], "--fp16_loss_scale=0.0: ", "must be > 0", E),
    (["--use_fp16", "--fp16_enable_auto_loss_scale", "--fp16_inc_loss_scale_every_n=0"],
     "--fp16_inc_loss_scale_every_n=0: ", "must be >= 1", E),
    (["--device=gpu", "--variable_update=replicated", "--use_bf16",
      "--compact_gradient_transfer"], "--compact_gradient_transfer=True: ",
     "sends bfloat16, which NCCL cannot carry; use --all_reduce_spec=psgpu or ring, or "
     "--compact_transfer_dtype=float16", E),
    (["--device=gpu", "--variable_update=replicated", "--compact_gradient_transfer",
      "--compact_transfer_dtype=bfloat16"], "--compact_gradient_transfer=True: ",
     "sends bfloat16, which NCCL cannot carry", E),
    (["--gradient_accumulation_steps=0"], "--gradient_accumulation_steps=0: ",
     "must be >= 1 (1: no accumulation)", E),
    (["--gradient_accumulation_steps=2", "--variable_update=independent"],
     "--gradient_accumulation_steps=2: ", "conflicts with --variable_update=independent", E),
    # --- towertrain/config/observe_checks.py
    (["--train_dir={tmp}", "--summary_verbosity=4"], "--summary_verbosity=4: ",
     "must be 0 (off), 1 (scalars), 2", E),
    (["--train_dir={tmp}", "--summary_verbosity=-1"], "--summary_verbosity=-1: ",
     "must be 0 (off), 1 (scalars), 2", E),
    (["--save_summaries_steps=-1"], "--save_summaries_steps=-1: ", "must be >= 1, or 0", E),
    (["--train_dir={tmp}", "--summary_verbosity=1", "--save_summaries_steps=0"],
     "--summary_verbosity=1: ", "asks for summaries, but --save_summaries_steps=0", E),
    (["--summary_verbosity=1"], "--summary_verbosity=1: ",
     "needs --train_dir or --summary_dir", E),
    (["--summary_dir={tmp}"], "--summary_dir=", "needs --summary_verbosity >= 1", E),
    (["--trace_file={tmp}/t.json", "--trace_step=0"], "--trace_step=0: ", "must be >= 1", E),
    (["--trace_step=20"], "--trace_step=20: ", "needs --trace_file", E),
    (["--trace_file={tmp}/t.json", "--num_warmup_batches=3", "--trace_step=3"],
     "--trace_step=3: ", "is inside the warm-up (--num_warmup_batches=3: steps 1..3)", E),
    (["--trace_file={tmp}/t.txt"], "--trace_file=", "must end in .json", E),
    *[(["--train_dir={tmp}", f"--profile_steps={steps}"], f"--profile_steps={steps}: ", words,
       E) for steps, words in [("5", "must be two step numbers A,B"),
                               ("1,x", "must be two step numbers A,B"),
                               ("0,2", "needs 1 <= A <= B"), ("3,2", "needs 1 <= A <= B")]],
    (["--profile_steps=2,3"], "--profile_steps=2,3: ", "needs --train_dir or --summary_dir", E),
    # --- towertrain/config/eval_checks.py
    (["--eval_during_training_every_n_steps=5", "--eval_during_training_at_specified_steps=3"],
     "--eval_during_training_at_specified_steps=3: ",
     "conflicts with --eval_during_training_every_n_steps", E),
    (["--eval_during_training_every_n_epochs=0"], "--eval_during_training_every_n_epochs=0.0: ",
     "must be > 0", E),
    *[([f"--eval_during_training_at_specified_{kind}={text}"],
       f"--eval_during_training_at_specified_{kind}={text}: ", words, E)
      for kind, text, words in [("steps", "x", "must be comma-separated whole step numbers"),
                                ("steps", "0,5", "steps must be >= 1"),
                                ("epochs", "x", "must be comma-separated epoch numbers"),
                                ("epochs", "0,1", "epochs must be > 0")]],
    *[(["--eval_during_training_every_n_steps=5", f"--stop_at_top_1_accuracy={value}"],
       f"--stop_at_top_1_accuracy={value}: ", "must be in (0, 1]", E)
      for value in ("0.0", "1.001")],
    (["--stop_at_top_1_accuracy=0.5"], "--stop_at_top_1_accuracy=0.5: ",
     "needs one of the --eval_during_training_* flags", E),
    (["--eval_during_training_every_n_steps=5", "--num_eval_batches=0"],
     "--num_eval_batches=0: ", "must be >= 1", E),
    (["--eval_during_training_every_n_steps=5", "--num_eval_epochs=0"],
     "--num_eval_epochs=0.0: ", "must be > 0", E),
    (["--eval_during_training_every_n_steps=5", "--num_eval_batches=2",
      "--num_eval_epochs=1"], "--num_eval_batches=2: ", "conflicts with --num_eval_epochs=1.0",
     E),
    (["--eval_interval_secs=-1"], "--eval_interval_secs=-1.0: ", "must be >= 0", E),
    (["--eval_interval_secs=5"], "--eval_interval_secs=5.0: ", "only applies with --eval", E),
    (["--eval", "--checkpoint={tmp}/ckpt-1", "--eval_interval_secs=5"],
     "--eval_interval_secs=5.0: ", "follows --train_dir's new checkpoints", E),
    (["--eval_dir={tmp}"], "--eval_dir=", "only applies with --eval", E),
    *[([f"--display_perf_ewma={value}"], f"--display_perf_ewma={value}: ",
       "must be in (0, 1]", E) for value in ("0.0", "1.001")],
    # --- towertrain/config/exchange_checks.py
    *[(["--variable_update=replicated", f"--gradient_repacking={packs}"],
       f"--gradient_repacking={packs}: ", "must be in 0..1000", E) for packs in ("-1", "1001")],
    *[(["--variable_update=replicated", f"--gradient_pack_mb={mb}"],
       f"--gradient_pack_mb={mb}: ", "must be a number >= 0", E) for mb in ("-0.5", "inf")],
    (["--variable_update=replicated", "--gradient_pack_mb=25", "--gradient_repacking=4"],
     "--gradient_pack_mb=25.0: ", "conflicts with --gradient_repacking=4", E),
    ([COLLECTIVE, "--gradient_repacking=4", "--xla_compile"], "--gradient_repacking=4: ",
     "conflicts with --xla_compile: a compiled tower hands out all its gradients at once", E),
    (["--variable_update=replicated", "--gradient_pack_mb=25", "--xla_compile"],
     "--gradient_pack_mb=25.0: ", "conflicts with --xla_compile", E),
    (["--variable_update=independent", "--gradient_pack_mb=25"], "--gradient_pack_mb=25.0: ",
     "only applies to --variable_update=replicated or", E),
    # --gradient_pack_mb=auto: a number or the word; refused where the numbers are.
    (["--variable_update=replicated", "--gradient_pack_mb=fast"], "--gradient_pack_mb=fast: ",
     "must be a number or auto", E),
    (["--variable_update=replicated", "--gradient_pack_mb=auto", "--gradient_repacking=4"],
     "--gradient_pack_mb=auto: ", "conflicts with --gradient_repacking=4", E),
    (["--variable_update=replicated", "--gradient_pack_mb=auto", "--xla_compile"],
     "--gradient_pack_mb=auto: ", "conflicts with --xla_compile", E),
    (["--variable_update=independent", "--gradient_pack_mb=auto"], "--gradient_pack_mb=auto: ",
     "only applies to --variable_update=replicated or", E),
    (["--variable_update=replicated", "--all_reduce_spec=collective"],
     "--all_reduce_spec=collective: ", "is a --variable_update=collective_all_reduce exchange",
     E),
    ([COLLECTIVE, "--all_reduce_spec=ring"], "--all_reduce_spec=ring: ",
     "is a --variable_update=replicated algorithm", E),
    (["--variable_update=replicated", "--all_reduce_spec=nccl"], "--all_reduce_spec=nccl: ",
     "needs --device=gpu; on CPU devices use pscpu or ring", E),
    ([COLLECTIVE, "--all_reduce_spec=nccl/xring"], "--all_reduce_spec=nccl/xring: ",
     "needs --device=gpu; on CPU devices use pscpu/xring, scatter/xring or collective", E),
    # --- towertrain/config/runtime_checks.py
    *[([f"--{flag}=-1"], f"--{flag}=-1: ", "must be >= 0", E)
      for flag in ("num_intra_threads", "num_inter_threads")],
    *[([f"--{flag}=-1"], f"--{flag}=-1: ", "must be >= 0", E)
      for flag in ("kmp_blocktime", "kmp_settings")],
    *[([f"--{flag}=0"], f"--{flag}=0: ", "must be >= 1", E)
      for flag in ("datasets_prefetch_buffer_size", "datasets_parallel_interleave_cycle_length",
                   "datasets_parallel_interleave_prefetch", "batch_group_size")],
    (["--data_dir={data}", "--datasets_num_private_threads=-1"],
     "--datasets_num_private_threads=-1: ", "must be >= 0", E),
    (["--allow_growth"], "--allow_growth=True: ", "sets GPU memory growth; CPU devices", E),
    *[(["--device=gpu", f"--gpu_indices={text}"], f"--gpu_indices={text}: ", words, E)
      for text, words in [("a", "must be comma-separated GPU indices"),
                          ("0,0", "lists a GPU twice")]],
    (["--gpu_indices=0"], "--gpu_indices=0: ", "needs --device=gpu", E),
    (["--device=gpu", "--num_gpus=2", "--gpu_indices=1"], "--gpu_indices=1: ",
     "lists 1 GPU(s) for --num_gpus=2 towers", E),
    (["--device=gpu", "--variable_update=replicated", "--use_fp16", "--fp16_vars"],
     "--fp16_vars=True: ", "not with --all_reduce_spec=nccl", E),
    (["--data_dir={data}", "--staging_depth=0", "--batch_group_size=2"],
     "--batch_group_size=2: ", "needs staging (--staging_depth >= 1)", E),
    *[([f"--{flag}"], f"--{flag}: ", "only applies with --mkl", E)
      for flag in ("kmp_blocktime=0", "kmp_affinity=compact", "kmp_settings=1")],
    (["--use_chrome_trace_format"], "--use_chrome_trace_format=True: ",
     "only applies with --trace_file", E),
    # --datasets_* apply to --data_dir with --input=dataset: each is refused
    # without --data_dir, and with --data_dir but another --input.
    *[([flag], f"--{_name(flag)}=", "only applies to a tf.data pipeline over files "
       "(--data_dir with --input=dataset)", E) for flag in DATASETS_FLAGS],
    *[(["--data_dir={data}", "--input=queue", flag], f"--{_name(flag)}=",
       "only applies to a tf.data pipeline over files", E) for flag in DATASETS_FLAGS],
    (["--data_dir={data}", "--input=dataset", "--nodatasets_use_prefetch",
      "--datasets_prefetch_buffer_size=4"], "--datasets_prefetch_buffer_size=4: ",
     "conflicts with --nodatasets_use_prefetch; drop one", E),
    # --batch_group_size on synthetic data, at its default value and above.
    (["--batch_group_size=1"], "--batch_group_size=1: ", "needs --data_dir", E),
    (["--batch_group_size=2"], "--batch_group_size=2: ", "needs --data_dir", E),
    # --- towertrain/config/tfcnn_checks.py
    (["--hierarchical_copy"], "--hierarchical_copy", "", E),
    # Every flag --forward_only never reads (it trains and writes nothing).
    *[(["--forward_only", _sample(name)], f"--{name}=", "does not apply to --forward_only", E)
      for name in _forward_only_refuses()],
    # --- towertrain/config/cluster_checks.py and cluster_spec.py
    *[([COLLECTIVE, f"--collective_timeout_secs={secs}"], f"--collective_timeout_secs={secs}",
       "must be > 0", E) for secs in ("0", "-1")],
    (["--task_index=-1"], "--task_index=-1: ", "must be >= 0 (0 is the chief)", E),
    (["--task_index=1"], "--task_index=1: ", "needs --worker_hosts (or TF_CONFIG)", E),
    *[([COLLECTIVE, f"--worker_hosts={hosts}"], f"--worker_hosts={hosts}: ", words, E)
      for hosts, words in [(",", "needs host:port[,host:port...]"),
                           ("127.0.0.1", "'127.0.0.1' is not host:port"),
                           ("h:0", "'h:0' is not host:port"),
                           ("h:65536", "'h:65536' is not host:port"),
                           ("h:1,h:1", "an address is listed twice")]],
    *[([COLLECTIVE, "--worker_hosts=h:1,h:2", f"--task_index={task}"], f"--task_index={task}: ",
       "must be in 0..1 (--worker_hosts lists 2 workers)", E) for task in (2, 3)],
    (["--worker_hosts=h:1,h:2"], "--worker_hosts=h:1,h:2: ",
     "needs --variable_update=collective_all_reduce (got parameter_server)", E),
    ([COLLECTIVE, "--device=gpu", "--num_gpus=1", "--compact_gradient_transfer",
      "--compact_transfer_dtype=bfloat16"], "--compact_gradient_transfer=True: ",
     "sends bfloat16, which NCCL cannot carry (--all_reduce_spec=collective crosses workers "
     "from GPUs); use --collective_implementation=ring or --compact_transfer_dtype=float16", E),
    *[([f"--slurm_port_base={port}"], f"--slurm_port_base={port}: ",
       "must be a port number in 1..65535", E) for port in ("-1", "0", "65536", "65537")],
    (["--cluster_source=flags"], "--cluster_source=flags: ", "needs --worker_hosts", E),
    ([COLLECTIVE, "--device=cpu", "--collective_implementation=nccl"],
     "--collective_implementation=nccl: ", "needs --device=gpu (NCCL runs between GPUs); on "
     "CPU devices use ring or auto", E),
    ([COLLECTIVE, "--device=gpu", "--num_gpus=1", "--all_reduce_spec=pscpu/xring",
      "--collective_implementation=nccl"], "--collective_implementation=nccl: ",
     "needs a GPU to cross workers, and --all_reduce_spec=pscpu/xring crosses from /cpu:0; "
     "use nccl/xring, psgpu/xring, scatter/xring or collective", E),
    ([COLLECTIVE, "--cluster_source=tf_config", "--worker_hosts=h:1,h:2"],
     "--worker_hosts=h:1,h:2: ", "is not read with --cluster_source=tf_config", E),
    (["--cluster_source=slurm"], "--cluster_source=slurm: ",
     "needs --variable_update=collective_all_reduce (got parameter_server)", E),
    # Found in the environment: the same rule as for --worker_hosts.
    ([], "--variable_update=parameter_server: ", "TF_CONFIG is set, which describes a cluster "
     "of workers that needs --variable_update=collective_all_reduce", TWO_WORKERS_TF_CONFIG),
    ([], "--variable_update=parameter_server: ", "this Slurm step has 2 tasks, which describes "
     "a cluster of workers that needs --variable_update=collective_all_reduce", TWO_SLURM_TASKS),
    # --- towertrain/plan/cluster.py (TF_CONFIG and Slurm, read when the run is laid out)
    # Slurm tasks sharing a node's GPUs: each its own, or refused.
    ([COLLECTIVE, "--cluster_source=slurm", "--device=gpu", "--num_gpus=2"],
     "--cluster_source=slurm: ", "--num_gpus=2: 2 workers on node 127.0.0.1 need 4 GPUs of "
     "their own, and it has 3 (CUDA_VISIBLE_DEVICES=0,1,2)",
     {**TWO_SLURM_TASKS, "CUDA_VISIBLE_DEVICES": "0,1,2"}),
    ([COLLECTIVE], "--cluster_source=auto: ", "the cluster is given more than once "
     "(TF_CONFIG, Slurm)", {**TWO_WORKERS_TF_CONFIG, **TWO_SLURM_TASKS}),
    ([COLLECTIVE, "--cluster_source=tf_config"], "--cluster_source=tf_config: ",
     "the TF_CONFIG environment variable is not set", E),
    ([COLLECTIVE], "TF_CONFIG: ", "not a cluster description", {"TF_CONFIG": "{not json"}),
    ([COLLECTIVE], "TF_CONFIG: ", "task type 'ps': only 'chief' and 'worker' tasks",
     TF_CONFIG_OF({"cluster": {**WORKERS, "ps": ["127.0.0.1:7003"]},
                   "task": {"type": "worker", "index": 0}})),
    ([COLLECTIVE], "TF_CONFIG: ", "2 'chief' tasks; at most one",
     TF_CONFIG_OF({"cluster": {**WORKERS, "chief": ["127.0.0.1:7003", "127.0.0.1:7004"]},
                   "task": {"type": "worker", "index": 0}})),
    ([COLLECTIVE], "TF_CONFIG: ", "chief task index 1; the chief is index 0",
     TF_CONFIG_OF({"cluster": {**WORKERS, "chief": ["127.0.0.1:7003"]},
                   "task": {"type": "chief", "index": 1}})),
    ([COLLECTIVE], "TF_CONFIG: ", "task index 2 is not in 0..1",
     TF_CONFIG_OF({"cluster": WORKERS, "task": {"type": "worker", "index": 2}})),
    ([COLLECTIVE, "--cluster_source=slurm"], "--cluster_source=slurm: ", "(run under srun", E),
    # --- towertrain/plan/input_checks.py
    (["--data_dir={data}", "--resize_method=bilinear"], "--resize_method=bilinear: ",
     "only applies to imagenet", E),
    (["--resize_method=bilinear"], "--resize_method=bilinear: ",
     "synthetic data is generated at the model's input size", E),
    (["--distortions"], "--distortions: ", "synthetic data is generated at the model's", E),
    *[(["--data_dir={data}", "--input=dataset", flag], f"--{_name(flag)}=",
       "only applies to imagenet's TFRecord shards", E) for flag in DATASETS_FLAGS[4:7]],
    # --- towertrain/plan/steps.py, schedule.py, eval_schedule.py (need the input's length)
    (["--eval_during_training_every_n_epochs=1"], "--eval_during_training_every_n_epochs=1.0: ",
     "needs the epoch length", E),
    (["--eval_during_training_at_specified_epochs=1"],
     "--eval_during_training_at_specified_epochs=1: ", "needs the epoch length", E),
    # --- towertrain/plan/learning_rate/: a flag the model's own recipe would ignore,
    # and a decay interval shorter than a step.
    (["--model=resnet20", "--num_learning_rate_warmup_epochs=1"],
     "--num_learning_rate_warmup_epochs=1.0: ", "only applies with --init_learning_rate or "
     "--piecewise_learning_rate_schedule; without them resnet20 trains with its own", E),
    (["--model=alexnet_cifar", "--num_examples_per_epoch=1", "--batch_size=101"],
     "--batch_size=101: ", "more than alexnet_cifar's decay interval of 100 epochs", E),
    # An epoch of 64 examples at 8 per step is 8 steps: 1/16 epoch is half a step.
    (["--num_examples_per_epoch=64", "--batch_size=8", "--num_epochs_per_decay=0.0625",
      "--learning_rate_decay_factor=0.5"], "--num_epochs_per_decay=0.0625: ",
     "less than one step (an epoch is 8 steps)", E),
    (["--num_examples_per_epoch=64", "--num_epochs_per_decay=1",
      "--learning_rate_decay_factor=0.5", "--init_learning_rate=0.1",
      "--minimum_learning_rate=0.2"], "--minimum_learning_rate=0.2: ",
     "above the learning rate it decays from (0.1)", E),
]

# Refusals the command line cannot reach, through the library: the enum
# flags' values are refused by absl's parser first, the types by absl's too,
# and two plan checks stand behind command-line-only checks.
LIBRARY_CASES = [
    (lambda d: Params(variable_update="mirrored"), "--variable_update=mirrored: must be one of"),
    (lambda d: Params(num_gpus="2"), "--num_gpus='2': must be an integer (got str)"),
    (lambda d: Params(loss_type_to_report="x"), "--loss_type_to_report=x: must be one of"),
    (lambda d: Params(resize_method="x"), "--resize_method=x: must be one of"),
    (lambda d: Params(learning_rate_schedule="linear"),
     "--learning_rate_schedule=linear: must be one of cosine"),
    (lambda d: Params(scale_learning_rate="x"), "--scale_learning_rate=x: must be one of"),
    (lambda d: Params(variable_consistency="x"), "--variable_consistency=x: must be one of"),
    (lambda d: Params(cluster_source="x"), "--cluster_source=x: must be one of"),
    (lambda d: Params(collective_implementation="mpi"),
     "--collective_implementation=mpi: must be one of auto, ring, nccl"),
    # An input of the library's without a length (synthetic data has its
    # dataset's known size; the command line has no other input).
    (lambda d: Trainer(Params(model="trivial", device="cpu", num_epochs=1),
                       input_source=from_dataset(tf.data.Dataset.from_tensors(
                           (np.zeros((32, 32, 3), np.float32), 0)).repeat(), 8)),
     "--num_epochs=1: needs the epoch length"),
    # The same input without an epoch for a learning-rate flag that counts epochs
    # (synthetic data has its dataset's known size).
    (lambda d: Trainer(Params(model="trivial", device="cpu",
                              piecewise_learning_rate_schedule="0.1;5;0.01"),
                       input_source=from_dataset(tf.data.Dataset.from_tensors(
                           (np.zeros((32, 32, 3), np.float32), 0)).repeat(), 8)),
     "--piecewise_learning_rate_schedule=0.1;5;0.01: needs the epoch length"),
    # 64 examples in steps of 8 are 8 steps; --num_examples_per_epoch=100 says 13.
    (lambda d: Trainer(Params(model="trivial", device="cpu", batch_size=8,
                              num_examples_per_epoch=100), input_source=from_arrays(
        np.zeros((64, 32, 32, 3), np.float32), np.zeros(64, np.int32), 8, repeat=False)),
     "--num_examples_per_epoch=100: conflicts with the input's epoch of 8 steps of 8"),
    # An endless in-memory input of 4 examples, cut into epochs of global batches of 8.
    (lambda d: Trainer(Params(model="trivial", device="cpu", batch_size=8, num_epochs=1),
                       input_source=from_arrays(np.zeros((4, 32, 32, 3), np.float32),
                                                np.zeros(4, np.int32), 8)),
     "--num_epochs=1: from_arrays's global_batch=8 is larger than its 4 examples"),
]

# Sites no caller can reach, each with why ("path: its first line" as the key).
UNREACHABLE = {
    'towertrain/config/cluster_spec.py: raise ClusterError(f"--task_index={params.task_index}: '
    'must be in "': "Params refuses the same --task_index first (cluster_checks.py); "
    "from_flags keeps the check for callers that bypass Params",
    'towertrain/plan/learning_rate/schedule.py: raise ParamsError('
    '"--learning_rate_schedule=cosine: needs the run\'s length")':
        "a plan's total steps are >= 1 (--num_batches >= 1, --num_epochs >= 1 with a known "
        "epoch); kept for callers of schedule.learning_rate",
}

# Command lines at the boundary of a refusal above (the last value accepted),
# and next to it: each gets past every check, to the start of real work.
ACCEPTED = [
    # Synthetic data: --num_epochs counts the dataset's known size.
    (["--num_epochs=2"], E),
    # The per-device batch worked out, or the accumulation steps with --batch_size.
    (["--global_batch_size=8", "--num_gpus=2"], E),
    (["--straggler_threshold=0"], E),
    (["--global_batch_size=8", "--num_gpus=2", "--batch_size=2"], E),
    # ... and so do the learning-rate flags that count epochs.
    (["--piecewise_learning_rate_schedule=0.1;5;0.01"], E),
    (["--num_epochs_per_decay=1", "--learning_rate_decay_factor=0.5"], E),
    (["--num_learning_rate_warmup_epochs=1"], E),
    (["--model=alexnet_cifar", "--num_examples_per_epoch=1", "--batch_size=100"], E),
    (["--data_dir={data}", "--input=dataset", "--datasets_prefetch_buffer_size=4"], E),
    (["--data_dir={data}", "--input=dataset", *DATASETS_FLAGS[:4]], E),
    (["--data_dir={data}", "--batch_group_size=2"], E),
    (["--data_dir={data}", "--batch_size=32"], E),  # one full batch an epoch
    ([COLLECTIVE, "--sync_batch_norm"], ONE_WORKER_TF_CONFIG),
    ([COLLECTIVE, "--sync_batch_norm", "--cluster_source=tf_config"], ONE_WORKER_TF_CONFIG),
    (["--batch_size=1", "--num_batches=1", "--display_every=1", "--num_warmup_batches=0",
      "--weight_decay=0", "--max_ckpts_to_keep=1", "--train_dir={tmp}"], E),
    (["--optimizer=momentum", "--momentum=0"], E),
    (["--optimizer=momentum", "--momentum=0.999"], E),
    (["--num_warmup_batches=2", "--num_batches=3", "--eval_during_training_every_n_steps=5"],
     E),
    (["--trace_file={tmp}/t.json", "--num_warmup_batches=3", "--trace_step=4"], E),
    (["--train_dir={tmp}", "--profile_steps=1,1"], E),
    (["--variable_update=replicated", "--gradient_repacking=1000"], E),
    (["--variable_update=replicated", "--gradient_pack_mb=0", "--xla_compile"], E),
    (["--variable_update=replicated", "--gradient_pack_mb=0", "--gradient_repacking=0"], E),
    ([COLLECTIVE, "--gradient_pack_mb=0.000001"], E),
    ([COLLECTIVE, "--gradient_pack_mb=auto"], E),
    (["--num_examples_per_epoch=64", "--batch_size=8", "--num_epochs_per_decay=0.125",
      "--learning_rate_decay_factor=1"], E),
    (["--num_examples_per_epoch=64", "--num_epochs_per_decay=1",
      "--learning_rate_decay_factor=0.5", "--init_learning_rate=0.1",
      "--minimum_learning_rate=0.1"], E),
    (["--eval_during_training_every_n_steps=5", "--stop_at_top_1_accuracy=1",
      "--display_perf_ewma=1"], E),
    (["--optimizer=rmsprop", "--rmsprop_decay=0", "--rmsprop_momentum=0"], E),
    (["--gradient_accumulation_steps=1", "--eval_interval_secs=0"], E),
    (["--slurm_port_base=1"], E),
    (["--slurm_port_base=65535"], E),
    ([COLLECTIVE, "--worker_hosts=h:1,h:65535", "--task_index=1"], E),
    ([COLLECTIVE, "--worker_hosts=h:1,h:2", "--collective_timeout_secs=0.5"], E),
]


# The last value each flag check accepts, at its boundary; the flag checks
# alone (parser, Params, the command line's checks) judge these, so one case
# costs milliseconds. EVAL: a run that evaluates, for the eval flags.
EVAL = "--eval_during_training_every_n_steps=1"
FLAG_CHECKS_ACCEPT = [
    ["--batch_size=1", "--num_batches=1", "--num_warmup_batches=0", "--display_every=1",
     "--num_gpus=1", "--weight_decay=0", "--init_learning_rate=1e-9"],
    ["--data_dir={data}", "--staging_depth=0", "--num_epochs=1",
     "--datasets_prefetch_buffer_size=1", "--datasets_num_private_threads=0",
     "--datasets_parallel_interleave_cycle_length=1",
     "--datasets_parallel_interleave_prefetch=1", "--input=dataset"],
    ["--data_dir={data}", "--batch_group_size=1"],
    ["--train_dir={tmp}", "--save_model_steps=1", "--max_ckpts_to_keep=1",
     "--summary_verbosity=3", "--save_summaries_steps=1", "--profile_steps=1,1"],
    ["--train_dir={tmp}", "--save_model_secs=0.001", "--summary_verbosity=0",
     "--save_summaries_steps=0"],
    ["--trace_file={tmp}/t.json", "--num_warmup_batches=0", "--trace_step=1"],
    [EVAL, "--num_eval_batches=1", "--stop_at_top_1_accuracy=0.001",
     "--display_perf_ewma=0.001"],
    [EVAL, "--num_eval_epochs=0.001", "--stop_at_top_1_accuracy=1", "--display_perf_ewma=1"],
    ["--eval_during_training_every_n_epochs=0.001", "--num_examples_per_epoch=1"],
    ["--eval_during_training_at_specified_steps=1", "--eval_interval_secs=0"],
    ["--eval_during_training_at_specified_epochs=0.001"],
    ["--num_intra_threads=0", "--num_inter_threads=0", "--kmp_blocktime=0",
     "--kmp_settings=0", "--mkl"],
    ["--variable_update=replicated", "--gradient_repacking=0", "--all_reduce_spec=ring"],
    ["--gradient_accumulation_steps=1", "--gradient_clip=1e-9", "--global_norm_clip=1e-9",
     "--minimum_learning_rate=0", "--num_learning_rate_warmup_epochs=0"],
    ["--optimizer=momentum", "--momentum=0"],
    ["--optimizer=rmsprop", "--rmsprop_decay=0.999", "--rmsprop_momentum=0.999",
     "--rmsprop_epsilon=1e-12"],
    ["--optimizer=adam", "--adam_beta1=0", "--adam_beta2=0", "--adam_epsilon=1e-12"],
    ["--optimizer=adam", "--adam_beta1=0.999", "--adam_beta2=0.999"],
    ["--num_epochs_per_decay=0.001", "--learning_rate_decay_factor=0.001"],
    ["--scale_learning_rate=linear", "--base_batch_size=1"],
    ["--use_fp16", "--fp16_loss_scale=1e-9", "--fp16_enable_auto_loss_scale",
     "--fp16_inc_loss_scale_every_n=1"],
    [COLLECTIVE, "--worker_hosts=h:1", "--task_index=0", "--collective_timeout_secs=1e-9",
     "--slurm_port_base=1"],
    ["--piecewise_learning_rate_schedule=1e-9;0.001;1e-9"],
    ["--piecewise_learning_rate_schedule=0.1"],
]


@pytest.mark.parametrize("args", FLAG_CHECKS_ACCEPT,
                         ids=[" ".join(a) for a in FLAG_CHECKS_ACCEPT])
def test_the_flag_checks_accept_each_boundary_value(args, data_dir):
    from absl import flags
    from towertrain.commands import train
    flags_lib.define_flags()
    flags.FLAGS.unparse_flags()
    try:
        train.parse_flags(["towertrain", *_args(args, data_dir)])
        flags_lib.params_from_flags()
    finally:
        flags.FLAGS.unparse_flags()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return write_dataset(str(tmp_path_factory.mktemp("cifar")), num_train=32, num_test=16)


def _args(args, data_dir):
    args = [a.replace("{data}", data_dir).replace("{tmp}", os.path.dirname(data_dir) + "/scratch")
            for a in args]
    device = [] if any(a.startswith("--device=") for a in args) else ["--device=cpu"]
    return ["--model=trivial", *device, *args]


def _environment(monkeypatch, env):
    for name in CLUSTER_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)


def _run(args, env, data_dir, monkeypatch, capsys):
    with monkeypatch.context() as patch:
        _environment(patch, env)
        with refusals.stopped_before_work(patch):
            return refusals.run_cli(_args(args, data_dir), capsys)


# The sites each case reached, gathered as the cases run (the last test runs
# whichever cases did not run in this process, e.g. under -k or xdist).
_REACHED = {}


def _recorded(case, run, monkeypatch):
    recorder = refusals.Recorder()
    with recorder.recording(monkeypatch):
        try:
            return run()
        finally:
            _REACHED[case] = recorder.sites_hit(SITES)


SITES = refusals.refusal_sites()


@pytest.mark.parametrize("case", range(len(CASES)), ids=[" ".join(c[0]) for c in CASES])
def test_each_refusal_is_one_line_naming_its_flag_with_exit_2(
        case, data_dir, monkeypatch, capsys):
    args, start, words, env = CASES[case]
    status, err = _recorded(("cli", case), lambda: _run(args, env, data_dir, monkeypatch,
                                                          capsys), monkeypatch)
    assert status == 2, err
    assert err.startswith(f"towertrain: error: {start}") and words in err, err
    assert err.count("\n") == 1, err


@pytest.mark.parametrize("args,env", ACCEPTED, ids=[" ".join(case[0]) for case in ACCEPTED])
def test_the_neighbours_of_a_refusal_are_accepted(args, env, data_dir, monkeypatch, capsys):
    with pytest.raises(refusals.NotRefused):
        status, err = _run(args, env, data_dir, monkeypatch, capsys)
        pytest.fail(f"refused ({status}): {err}")


@pytest.mark.parametrize("case", range(len(LIBRARY_CASES)),
                         ids=[c[1].split(":")[0] for c in LIBRARY_CASES])
def test_refusals_only_the_library_reaches(case, data_dir, monkeypatch):
    build, message = LIBRARY_CASES[case]
    with pytest.raises(ParamsError) as refused:
        _recorded(("library", case), lambda: build(data_dir), monkeypatch)
    assert str(refused.value).startswith(message), str(refused.value)


def _key(site):
    return f"{site.path}: {site.source}"


def test_every_refusal_site_has_a_case(data_dir, monkeypatch, capsys):
    """Every fail(...) / raise ParamsError|ClusterError(...) under
    towertrain/config and towertrain/plan is reached by a case above, or is
    listed in UNREACHABLE with why. A new refusal needs its case."""
    for case, (args, _, _, env) in enumerate(CASES):
        if ("cli", case) not in _REACHED:
            _recorded(("cli", case), lambda: _run(args, env, data_dir, monkeypatch, capsys),
                      monkeypatch)
    for case, (build, _) in enumerate(LIBRARY_CASES):
        if ("library", case) not in _REACHED:
            with pytest.raises(ParamsError):
                _recorded(("library", case), lambda: build(data_dir), monkeypatch)
    reached = set().union(*_REACHED.values())
    assert len(SITES) > 100  # the walk found the checks
    missing = [str(site) for site in SITES
               if site not in reached and _key(site) not in UNREACHABLE]
    assert not missing, "refusals without a case in this table:\n" + "\n".join(missing)
    stale = set(UNREACHABLE) - {_key(site) for site in SITES}
    assert not stale, f"UNREACHABLE lists sites that are gone: {stale}"
    wrongly = [key for key in UNREACHABLE if any(_key(s) == key for s in reached)]
    assert not wrongly, f"UNREACHABLE lists sites a case reaches: {wrongly}"
