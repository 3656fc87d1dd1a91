"""The command line: tf_cnn_benchmarks output, and one clear line for bad flags."""
import os
import re
import subprocess
import sys

import pytest

from towertrain import Params, Trainer


def run_cli(*flags, timeout=240):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # as a user
    return subprocess.run([sys.executable, "-m", "towertrain", *flags], capture_output=True,
                          text=True, timeout=timeout, env=env)


STEP_LINE = re.compile(r"^\d+\timages/sec: \d+\.\d \+/- \d+\.\d \(jitter = \d+\.\d\)\t\d+\.\d{3}$")


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
    assert [int(line.split("\t")[0]) for line in steps] == [1, 2, 4]  # warmup excluded
    assert re.search(r"^total images/sec: \d+\.\d\d$", text, re.MULTILINE)
    assert result.steps == 7  # warmup + timed


@pytest.mark.slow
def test_cli_runs_the_issue_command_shape():
    proc = run_cli("--model=trivial", "--variable_update=replicated", "--num_gpus=2",
                   "--device=cpu", "--num_batches=3", "--num_warmup_batches=1",
                   "--display_every=1")
    assert proc.returncode == 0, proc.stderr
    assert "Variables:   replicated" in proc.stdout
    assert "AllReduce:   pscpu" in proc.stdout
    assert sum(bool(STEP_LINE.match(line)) for line in proc.stdout.splitlines()) == 3
    assert "total images/sec:" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("flags,message", [
    (["--model=resnet9000"], "towertrain: error: --model=resnet9000: unknown model"),
    (["--batch_size=0"], "towertrain: error: --batch_size=0: must be >= 1"),
    (["--device=cpu", "--variable_update=replicated", "--all_reduce_spec=nccl"],
     "towertrain: error: --all_reduce_spec=nccl: needs --device=gpu"),
    (["--device=gpu", "--num_gpus=8"], "towertrain: error: --num_gpus=8: only 0 GPU(s) present"),
    (["--variable_update=mirrored"], "flag --variable_update=mirrored"),
    (["extra_positional"], "towertrain: error: unexpected arguments"),
])
def test_bad_flags_exit_nonzero_with_one_clear_line(flags, message):
    proc = run_cli(*flags)
    assert proc.returncode != 0
    assert proc.stdout == ""  # failed before any work
    assert message in proc.stderr.strip().splitlines()[0]
