"""The command line: tf_cnn_benchmarks output, and one clear line for bad flags."""
import os
import re

import pytest

from towertrain import Params, ParamsError, Trainer
import helpers.cli
from helpers.doc_blocks import ROOT


def run_cli(*flags, timeout=240):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # as a user
    return helpers.cli.run_cli(*flags, timeout=timeout, env=env)


STEP_LINE = re.compile(r"^\d+\timages/sec: \d+\.\d \+/- \d+\.\d \(jitter = \d+\.\d\)\t\d+\.\d{3}"
                       r"\twait \d+%$")


def test_train_prints_header_step_lines_and_total():
    lines = []
    params = Params(model="trivial", device="cpu", num_gpus=2, batch_size=3,
                    variable_update="replicated", all_reduce_spec="ring", num_batches=5,
                    num_warmup_batches=2, display_every=2)
    result = Trainer(params).train(write=lines.append)
    text = "\n".join(lines)
    for expected in ["TensorFlow:  ", "Model:       trivial", "Dataset:     cifar10 (synthetic)",
                     "Mode:        training", "Batch size:  6 global", "             3 per device",
                     "Num batches: 5", "Devices:     ['/cpu:0', '/cpu:1']",
                     "Data format: NHWC", "Optimizer:   sgd", "Variables:   replicated",
                     "AllReduce:   ring", "==========", "Step\tImg/sec\ttotal_loss"]:
        assert expected in text
    steps = [line for line in lines if STEP_LINE.match(line)]
    # Global step numbers: warmup (steps 1-2) untimed, then the first timed
    # step and every --display_every-th.
    assert [int(line.split("\t")[0]) for line in steps] == [3, 4, 6]
    assert re.search(r"^total images/sec: \d+\.\d\d$", text, re.MULTILINE)
    assert result.steps == 7  # warmup + timed


@pytest.fixture
def command_line():
    """Parses a command line in this process as the CLI does; undone after."""
    from absl import flags
    from towertrain.commands import train as cli
    from towertrain.config import flags as flags_lib
    flags_lib.define_flags()

    def parse(*args):
        flags.FLAGS.unparse_flags()
        return cli.parse_flags(["towertrain", *args])
    yield parse
    flags.FLAGS.unparse_flags()


@pytest.mark.parametrize("args,message", [
    (["--zzz=1"], "--zzz: unknown flag; see --help"),  # --foo now suggests --forward_only
    (["--modle=resnet20"], "--modle: unknown flag; did you mean --model?"),
    # Every unknown flag in one message, not one per run.
    (["--modl=x", "--device=cpu", "--num_gpu=2", "--zzz"], "3 unknown flags: --modl (did you "
     "mean --model?), --num_gpu (did you mean --num_gpus?), --zzz; see --help"),
    (["--variable_update=mirrored"], "--variable_update=mirrored: must be one of "
     "parameter_server, replicated, independent"),
    (["--num_batches=ten"], "--num_batches=ten: must be an integer"),
    (["--save_model_secs=x"], "--save_model_secs=x: must be a number"),
    (["--num_batches"], "--num_batches: needs a value"),
    (["--eval=maybe"], "--eval=maybe: is on/off: use --eval or --noeval"),
])
def test_flag_syntax_errors_are_one_line_and_exit_2(command_line, capsys, args, message):
    with pytest.raises(SystemExit) as exit_:
        command_line(*args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"towertrain: error: {message}")
    assert err.count("\n") == 1  # one line


@pytest.mark.parametrize("args,message", [
    # Explicitly given flags that the combination would ignore; each names both.
    (["--eval", "--train_dir=d", "--optimizer=sgd"],
     "--optimizer=sgd: only applies to training; --eval ignores it"),
    (["--eval", "--train_dir=d", "--num_warmup_batches=0"], "--num_warmup_batches=0: only "
     "applies to training; --eval"),
    (["--eval", "--train_dir=d", "--staging_depth=1"], "--staging_depth=1: only applies to "
     "training; --eval"),
    (["--eval", "--train_dir=d", "--batch_size=8", "--eval_batch_size=4"],
     "--batch_size=8: --eval uses --eval_batch_size=4 instead; drop one"),
    (["--momentum=0.9"], "--momentum=0.9: only applies to --optimizer=momentum "
     "(got --optimizer=sgd)"),
    (["--adam_beta1=0.8"], "--adam_beta1=0.8: only applies to --optimizer=adam "
     "(got --optimizer=sgd)"),
    (["--max_ckpts_to_keep=5"], "--max_ckpts_to_keep=5: needs --train_dir"),
    (["--eval_batch_size=8"], "--eval_batch_size=8: only applies with --eval or "
     "--eval_during_training_every_n_steps"),
    (["--staging_depth=2"], "--staging_depth=2: needs --data_dir (synthetic data is "
     "generated on each device and never staged)"),
    (["--input=dataset"], "--input=dataset: needs --data_dir"),
    (["--num_batches=5", "--num_epochs=2"], "--num_batches=5: conflicts with --num_epochs=2"),
])
def test_ignored_flags_are_errors(command_line, args, message):
    from towertrain.config import flags as flags_lib
    command_line("--device=cpu", *args)
    with pytest.raises(ParamsError) as err:
        flags_lib.params_from_flags()
    assert str(err.value).startswith(message)


def test_flags_that_do_apply_are_accepted(command_line):
    from towertrain.config import flags as flags_lib
    command_line("--device=cpu", "--staging_depth=0", "--optimizer=momentum",
                 "--momentum=0.5", "--train_dir=d", "--max_ckpts_to_keep=2")
    params = flags_lib.params_from_flags()
    assert (params.staging_depth, params.momentum, params.num_batches) == (0, 0.5, None)
    command_line("--device=cpu", "--eval", "--train_dir=d", "--eval_batch_size=4")
    assert flags_lib.params_from_flags().eval_batch_size == 4
    assert flags_lib.explicit_flags() == {"device", "eval", "train_dir", "eval_batch_size"}


def test_help_lists_towertrains_flags_grouped_with_defaults(command_line, capsys):
    with pytest.raises(SystemExit) as exit_:
        command_line("--help")
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m towertrain")
    for expected in ["Model and data:", "--model=trivial", "--variable_update=parameter_server",
                     "--num_batches\n", "--[no]eval", "--eval_batch_size", "--[no]verbose"]:
        assert expected in out
    words = " ".join(out.split())  # help text is wrapped
    assert "One of: parameter_server, replicated, independent" in words
    assert "(default: 100; not with --num_epochs)" in words
    assert "logtostderr" not in out  # absl's flags only with --helpfull


def test_help_names_every_model_and_gives_the_readmes_first_command(command_line, capsys):
    from towertrain.models import catalog
    with pytest.raises(SystemExit):
        command_line("--help")
    out = capsys.readouterr().out
    models = out[out.index("Models (--model=NAME"):out.index("towertrain's flags")]
    listed = " ".join(models.splitlines()[1:]).replace(",", " ").split()
    assert listed == catalog.registered_names()
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        first = next(line for line in f if "python -m towertrain" in line)
    example = first.split("&& ", 1)[1].strip()
    assert f"\n  {example}\n" in out.split("Models (")[0], out[:600]


@pytest.mark.slow
def test_cli_help_exits_0_and_helpfull_adds_absls_flags():
    proc = run_cli("--help")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.index("--model=") < proc.stdout.index("--[no]verbose")
    full = run_cli("--helpfull")
    assert full.returncode == 0
    assert "--model=trivial" in full.stdout and "logtostderr" in full.stdout


@pytest.mark.slow
def test_cli_runs_the_issue_command_shape(tmp_path):
    # With --train_dir and a save every step: TensorFlow's INFO lines (one per
    # save) and C++ notices stay off stderr.
    proc = run_cli("--model=trivial", "--variable_update=replicated", "--num_gpus=2",
                   "--device=cpu", "--num_batches=3", "--num_warmup_batches=1",
                   "--display_every=1", f"--train_dir={tmp_path}", "--save_model_steps=1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "Variables:   replicated" in proc.stdout
    assert "AllReduce:   pscpu" in proc.stdout
    assert sum(bool(STEP_LINE.match(line)) for line in proc.stdout.splitlines()) == 3
    assert "total images/sec:" in proc.stdout


BAD_FLAGS = [
    (["--model=resnet9000"], "towertrain: error: --model=resnet9000: unknown model"),
    (["--batch_size=-1"], "towertrain: error: --batch_size=-1: must be >= 1"),
    (["--device=cpu", "--variable_update=replicated", "--all_reduce_spec=nccl"],
     "towertrain: error: --all_reduce_spec=nccl: needs --device=gpu"),
    (["--device=gpu", "--num_gpus=8"], "towertrain: error: --num_gpus=8: only 0 GPU(s) present"),
    (["--variable_update=mirrored"], "towertrain: error: --variable_update=mirrored: must be"),
    (["--modle=trivial"], "towertrain: error: --modle: unknown flag; did you mean --model?"),
    (["--num_batches=5", "--num_epochs=1"],
     "towertrain: error: --num_batches=5: conflicts with --num_epochs=1"),
    (["extra_positional"], "towertrain: error: unexpected arguments"),
    (["--num_epochs=1.5"], "towertrain: error: --num_epochs=1.5: must be an integer (whole "
                           "epochs; --num_batches runs part of one)"),
]

@pytest.fixture(scope="module")
def bad_flag_runs(tmp_path_factory):
    """Every bad command line through the CLI's own entry, in one process
    (helpers.cli.run_cases: each its own exit status, stdout and stderr)."""
    runs = helpers.cli.run_cases("train", [flags for flags, _ in BAD_FLAGS],
                     tmp_path_factory.mktemp("bad_flags") / "results.json")
    return {tuple(flags): run for (flags, _), run in zip(BAD_FLAGS, runs)}


@pytest.mark.slow
@pytest.mark.parametrize("flags,message", BAD_FLAGS)
def test_bad_flags_exit_2_with_one_clear_line(bad_flag_runs, flags, message):
    returncode, stdout, stderr = bad_flag_runs[tuple(flags)]
    assert returncode == 2, stderr
    assert stdout == ""  # failed before any work
    assert stderr.startswith(message)
    assert len(stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_eval_takes_the_model_and_dataset_from_the_train_dir(tmp_path):
    # lenet's own dataset is imagenet: evaluating this run needs both from the record.
    train = run_cli("--model=lenet", "--data_name=cifar10", "--device=cpu", "--batch_size=2",
                    "--num_batches=1", "--num_warmup_batches=0", f"--train_dir={tmp_path}",
                    "--verbose")
    assert train.returncode == 0, train.stderr
    assert train.stderr.strip()  # --verbose lets TensorFlow's log lines through
    evaluated = run_cli("--eval", f"--train_dir={tmp_path}", "--device=cpu",
                        "--eval_batch_size=2")
    assert evaluated.returncode == 0, evaluated.stderr
    assert evaluated.stderr == ""
    assert "Accuracy @ 1" in evaluated.stdout
    assert "Model:       lenet" in evaluated.stdout and "cifar10" in evaluated.stdout
    wrong = run_cli("--eval", f"--train_dir={tmp_path}", "--device=cpu", "--model=trivial")
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert wrong.stderr == (f"towertrain: error: --model=trivial but --train_dir={tmp_path} "
                            "was trained with --model=lenet; drop --model or use another "
                            "--train_dir\n")
