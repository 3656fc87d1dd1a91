"""Checkpoint flags through the command line, checked on the files they leave.

- --max_ckpts_to_keep=2 with a save every step: exactly the last two
  checkpoints' files remain, and the `checkpoint` state lists exactly them.
- --eval --checkpoint=DIR/ckpt-N evaluates that (older) checkpoint: its step
  is reported, not the latest one's.
- --save_model_secs: a run that lasts well past the interval writes
  checkpoints along the way (not only the final one), but not every step.
"""
import os
import re

import pytest
import helpers.cli

pytestmark = pytest.mark.slow

COMMON = ["--model=trivial", "--device=cpu", "--batch_size=2", "--num_warmup_batches=0",
          "--display_every=1000"]


def run_cli(*flags, timeout=240):
    return helpers.cli.run_cli(*flags, timeout=timeout, check=True).stdout


def checkpoint_state(train_dir):
    """(latest, [all kept], [their timestamps]) from the `checkpoint` text file."""
    with open(os.path.join(train_dir, "checkpoint")) as f:
        text = f.read()
    latest = re.search(r'^model_checkpoint_path: "(.*)"$', text, re.M).group(1)
    kept = re.findall(r'^all_model_checkpoint_paths: "(.*)"$', text, re.M)
    stamps = [float(s) for s in re.findall(r"^all_model_checkpoint_timestamps: (\S+)$",
                                           text, re.M)]
    return os.path.basename(latest), [os.path.basename(k) for k in kept], stamps


def checkpoint_files(train_dir):
    return sorted(name for name in os.listdir(train_dir) if name.startswith("ckpt-"))


@pytest.fixture(scope="module")
def rotated(tmp_path_factory):
    train_dir = str(tmp_path_factory.mktemp("rotated"))
    run_cli(*COMMON, "--num_batches=5", "--save_model_steps=1", "--max_ckpts_to_keep=2",
            f"--train_dir={train_dir}")
    return train_dir


def test_max_ckpts_to_keep_leaves_exactly_the_last_checkpoints(rotated):
    assert checkpoint_files(rotated) == ["ckpt-4.data-00000-of-00001", "ckpt-4.index",
                                         "ckpt-5.data-00000-of-00001", "ckpt-5.index"]
    latest, kept, _ = checkpoint_state(rotated)
    assert (latest, kept) == ("ckpt-5", ["ckpt-4", "ckpt-5"])


def eval_step(output):
    """The step in the eval's Checkpoint header line and in its accuracy line."""
    header = re.search(r"^Checkpoint:\s+(\S+) \(step (\d+)\)$", output, re.M)
    result = re.search(r"^Accuracy @ 1 = \S+ Accuracy @ 5 = \S+ \(step (\d+)\)", output, re.M)
    assert header and result, output
    return os.path.basename(header.group(1)), int(header.group(2)), int(result.group(1))


def test_eval_checkpoint_flag_evaluates_that_older_checkpoint(rotated):
    older = run_cli("--eval", "--device=cpu", f"--train_dir={rotated}",
                    f"--checkpoint={os.path.join(rotated, 'ckpt-4')}")
    # Not the latest (ckpt-5), which --eval alone scores (its step in the result
    # line: tests/state/test_eval_checked.py).
    assert eval_step(older) == ("ckpt-4", 4, 4)
    assert checkpoint_files(rotated)[-1] == "ckpt-5.index"  # eval wrote nothing


def test_save_model_secs_saves_during_the_run(tmp_path):
    seconds, steps = 0.05, 400
    run_cli(*COMMON, f"--num_batches={steps}", f"--save_model_secs={seconds}",
            "--max_ckpts_to_keep=10000", f"--train_dir={tmp_path}")
    latest, kept, _ = checkpoint_state(str(tmp_path))
    numbers = [int(name.split("-")[1]) for name in kept]
    assert latest == f"ckpt-{steps}" and numbers[-1] == steps
    assert numbers == sorted(numbers)
    assert len(numbers) >= 2, f"only {kept}: no periodic saves"
    assert sorted(checkpoint_files(str(tmp_path))) == sorted(
        f"{name}{ext}" for name in kept for ext in (".index", ".data-00000-of-00001"))
    # Timed, not every step (a save per step, after draining the staged batch,
    # would give about steps / 2).
    assert len(numbers) <= steps // 4, f"{len(numbers)} saves in {steps} steps"
