"""Failing safely, end to end in subprocesses: SIGKILL + resume is exact, a
NaN loss stops without saving. (SIGTERM through the CLI saves the last
finished step and exits 0: test_trust_guards, in the same single CLI run that
checks the step it names.)"""
import os
import random
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from towertrain import Trainer

from helpers import tiny_models
from helpers.checkpoint_files import latest_step
from helpers.cli import driver
from helpers.run_handles import checkpointer_for
from helpers.sweep import full_sweep_only

pytestmark = pytest.mark.slow

# The CLI with the tests' tiny model registered and deterministic kernels.
DRIVER = driver("train", deterministic=True)
COMMON = ["--model=ckpt_tiny", "--device=cpu", "--num_gpus=2", "--variable_update=replicated",
          "--optimizer=momentum", "--num_warmup_batches=0", "--batch_size=3",
          "--display_every=1"]


def command(train_dir, *flags):
    return [sys.executable, "-c", DRIVER, f"--train_dir={train_dir}", *COMMON, *flags]


def environment():
    return dict(os.environ, PYTHONUNBUFFERED="1")




def saved_tensors(train_dir):
    reader = tf.train.load_checkpoint(train_dir)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if not name.startswith(("_CHECKPOINTABLE", "save_counter"))}


# The same claim as test_resume_epochs' kill -9 test, which runs it with the
# default staging on files over epoch ends (the harder case); this synthetic
# run repeats it with a save every step, in the full sweep only.
@full_sweep_only("test_resume_epochs' kill -9 test proves the same claim on files "
                 "with staging")
def test_sigkill_at_random_steps_then_resume_is_exact(tmp_path):
    # Two kills (the second lands in a resumed run) spread over a short run:
    # what the claim needs is "anywhere" and "more than once", not many steps.
    total = 32
    flags = [f"--num_batches={total}", "--save_model_steps=1"]
    reference = str(tmp_path / "reference")
    subprocess.run(command(reference, *flags), check=True, capture_output=True,
                   env=environment(), timeout=300)

    interrupted = str(tmp_path / "interrupted")
    rng = random.Random()
    kill_points = [rng.randrange(3, 12), rng.randrange(15, 24)]
    for kill_at in kill_points:
        proc = subprocess.Popen(command(interrupted, *flags), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=environment())
        while latest_step(interrupted) < kill_at and proc.poll() is None:
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL, f"finished before step {kill_at}"
    killed_at = latest_step(interrupted)
    assert killed_at < total
    done = subprocess.run(command(interrupted, *flags), capture_output=True, text=True,
                          env=environment(), timeout=300)
    assert done.returncode == 0, done.stderr
    assert re.search(rf"Resumed:\s+from step {killed_at} ", done.stdout), done.stdout

    expected, got = saved_tensors(reference), saved_tensors(interrupted)
    assert sorted(got) == sorted(expected)
    assert int(got["step/.ATTRIBUTES/VARIABLE_VALUE"]) == total
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], atol=1e-6, rtol=0,
                                   err_msg=f"{name} (kill points {kill_points})")


def test_nan_loss_stops_without_saving_and_previous_checkpoint_restores(tmp_path):
    train_dir = str(tmp_path)
    trivial = "--model=trivial"  # no batch norm to tame a huge learning rate (last flag wins)
    # The checkpoint to fall back to, written in this process as COMMON's flags
    # train (the CLI runs the same Trainer.train): the claim is the CLI run below.
    first = Trainer(tiny_models.tiny_params(train_dir=train_dir, num_batches=4,
                                                batch_size=3).replace(model="trivial"))
    try:
        first.train(write=lambda line: None)
    finally:
        first.close()
    assert latest_step(train_dir) == 4
    before = saved_tensors(train_dir)
    diverged = subprocess.run(command(train_dir, trivial, "--num_batches=200",
                                      "--init_learning_rate=1e6"),
                              capture_output=True, text=True, env=environment(), timeout=300)
    assert diverged.returncode != 0
    match = re.search(r"towertrain: error: loss is (nan|inf|-inf) at step (\d+);.*"
                      r"--init_learning_rate \(now 1e\+06\)", diverged.stderr)
    assert match, diverged.stderr
    assert int(match.group(2)) > 4
    assert "Saved checkpoint" not in diverged.stdout
    assert latest_step(train_dir) == 4
    after = saved_tensors(train_dir)
    for name in before:
        np.testing.assert_array_equal(after[name], before[name])

    trainer = Trainer(tiny_models.tiny_params(train_dir=train_dir).replace(model="trivial"))
    assert checkpointer_for(trainer, train_dir).restore_latest().endswith("ckpt-4")
    assert all(np.all(np.isfinite(v.numpy())) for v in trainer.variables.primary_variables()[0])
