"""Exact resume with the default flags (staging on): kill -9 anywhere, restart,
and the run ends where an uninterrupted one does; an epoch run trains on every
example exactly once per epoch across the interruption."""
import random
import re
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.callbacks import Callback
from towertrain.input_pipeline import from_arrays
from towertrain.input_pipeline.queue_input import QueueInput

from helpers import cifar_files
from helpers.checkpoint_files import latest_step

DRIVER = """
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import towertrain  # sets TF_ENABLE_ONEDNN_OPTS before TensorFlow loads
import tensorflow as tf
tf.config.experimental.enable_op_determinism()
from towertrain.commands import train as cli
cli.run()
"""


def command(data_dir, train_dir, *flags):
    return [sys.executable, "-c", DRIVER, "--model=cifar_cnn", "--device=cpu", "--num_gpus=2",
            "--variable_update=replicated", "--optimizer=momentum", "--batch_size=8",
            "--init_learning_rate=0.01", f"--data_dir={data_dir}", f"--train_dir={train_dir}",
            "--display_every=1", *flags]


def model_tensors(train_dir):
    """Model variables, optimizer slots and the step of the latest checkpoint."""
    reader = tf.train.load_checkpoint(train_dir)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith(("model/", "slots/", "step/"))}


def assert_same_tensors(got, expected, note=""):
    assert sorted(got) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], atol=1e-6, rtol=0,
                                   err_msg=f"{name} {note}")


# 72 examples in global batches of 16: 5 steps an epoch, the last partial (8).
# cifar_cnn has dropout; --distortions adds random crops and flips. 20 steps;
# the saves never land at an epoch's end.
FLAGS = ["--num_epochs=4", "--save_model_steps=3", "--distortions"]
STEPS = 20


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory):
    """The data and an uninterrupted 4-epoch run, shared by both tests below."""
    root = tmp_path_factory.mktemp("resume_epochs")
    data_dir = cifar_files.write_dataset(str(root / "data"), 72, 10, train_files=2)
    reference = str(root / "reference")
    subprocess.run(command(data_dir, reference, *FLAGS), check=True, capture_output=True,
                   timeout=300)
    assert latest_step(reference) == STEPS
    return data_dir, model_tensors(reference)


@pytest.mark.slow
def test_kill_9_with_staging_on_an_epoch_run_then_resume_is_exact(straight_run, tmp_path):
    data_dir, expected = straight_run
    interrupted = str(tmp_path / "interrupted")
    rng = random.Random()
    # Two kills (the second in a resumed run), each after a mid-epoch save.
    kill_points = sorted(rng.sample(range(3, 13, 3), 2))
    for kill_at in kill_points:
        proc = subprocess.Popen(command(data_dir, interrupted, *FLAGS),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while latest_step(interrupted) < kill_at and proc.poll() is None:
                time.sleep(0.002)
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(timeout=60) == -signal.SIGKILL, f"finished before {kill_at}"
        finally:
            proc.kill()
    killed_at = latest_step(interrupted)
    assert 0 < killed_at < STEPS
    done = subprocess.run(command(data_dir, interrupted, *FLAGS), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert re.search(rf"Resumed:\s+from step {killed_at} ", done.stdout), done.stdout
    # Step lines continue from the global step, and the run ends at its last batch.
    steps = [int(m) for m in re.findall(r"^(\d+)\timages/sec", done.stdout, re.M)]
    assert steps and steps[0] > killed_at and steps[-1] == STEPS, done.stdout
    # The header counts the steps this run runs (every one timed is printed).
    counts = re.search(r"^Num batches: (\d+) timed\n\s+of the (\d+) steps left \(steps "
                       r"(\d+)-(\d+),", done.stdout, re.M)
    assert counts, done.stdout[:3000]
    assert [int(c) for c in counts.groups()] == [len(steps), STEPS - killed_at,
                                                 killed_at + 1, STEPS], done.stdout[:3000]
    assert_same_tensors(model_tensors(interrupted), expected,
                        f"(kill points {kill_points})")


@pytest.mark.slow
def test_finished_epoch_run_extended_to_more_epochs_equals_a_straight_run(straight_run,
                                                                          tmp_path):
    data_dir, straight = straight_run
    run = str(tmp_path / "run")
    subprocess.run(command(data_dir, run, "--num_epochs=2", "--save_model_steps=3",
                           "--distortions"),
                   check=True, capture_output=True, timeout=300)
    assert latest_step(run) == 10
    done = subprocess.run(command(data_dir, run, *FLAGS), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert re.search(r"Resumed:\s+from step 10 ", done.stdout), done.stdout
    # The resumed run warms up (untimed) before its step lines; they carry global
    # step numbers and end at the last batch of epoch 4.
    steps = [int(m) for m in re.findall(r"^(\d+)\timages/sec", done.stdout, re.M)]
    assert steps and steps[0] > 10 and steps[-1] == STEPS and latest_step(run) == STEPS
    # Epochs 3 and 4 are shuffled and augmented as in the straight 4-epoch run.
    assert_same_tensors(model_tensors(run), straight)


class _Recorder(Callback):
    """Records the example ids each global step trained on (a later run's record
    of a step replaces an earlier one: that step was trained again)."""

    def __init__(self, seen, stop_at=None):
        self.seen = seen
        self.stop_at = stop_at
        self.current = None

    def before_step(self, step):
        self.current = step
        self.seen[step] = []

    def after_step(self, step, result, seconds):
        if step == self.stop_at:
            raise KeyboardInterrupt(f"simulated kill after step {step}")

    def loss_fn(self):
        def record(labels):
            self.seen[self.current].extend(labels.numpy().tolist())
            return np.float32(0)

        def loss(labels, logits):
            zero = tf.py_function(record, [labels], tf.float32)
            return keras.losses.sparse_categorical_crossentropy(
                labels, logits, from_logits=True) + zero
        return loss


def _shuffled_queue_input(images, ids, global_batch, epochs):
    """--input=queue's kind of source: Python threads feeding a queue, each
    epoch in its own seeded order; its position is not in checkpoints."""
    def source(epoch):
        for i in np.random.RandomState(epoch).permutation(len(ids)):
            yield images[i], ids[i]
    return QueueInput(source, images.shape[1:], global_batch, num_examples=len(ids),
                      num_epochs=epochs)


@pytest.mark.parametrize("input_kind,staging_depth", [("arrays", 1), ("arrays", 2),
                                                      ("queue", 1)])
# Killed after 5: the last save (3) is mid-epoch 1 and the resume crosses into
# epoch 2; after 8: saved at 6, mid-epoch 2, the resume crosses into epoch 3.
@pytest.mark.parametrize("stop_at", [5, 8])
def test_every_example_once_per_epoch_across_an_interruption(tmp_path, staging_depth,
                                                               stop_at, input_kind):
    num_examples, global_batch, epochs = 37, 8, 3  # 5 steps an epoch, the last partial
    ids = np.arange(num_examples, dtype=np.int32)
    images = np.random.RandomState(0).rand(num_examples, 2, 2, 1).astype(np.float32)
    seen = {}

    def run(stop):
        recorder = _Recorder(seen, stop)
        params = Params(device="cpu", num_gpus=2, num_epochs=epochs, num_warmup_batches=1,
                        staging_depth=staging_depth, init_learning_rate=0.01,
                        train_dir=str(tmp_path), save_model_steps=3, display_every=100)
        model = keras.Sequential([keras.Input((2, 2, 1)), keras.layers.Flatten(name="f"),
                                  keras.layers.Dense(num_examples, name="d")], name="ids")
        trainer = Trainer(params, model=model, loss_fn=recorder.loss_fn(),
                          input_source=from_arrays(images, ids, global_batch, shuffle=True,
                                                   num_epochs=epochs)
                          if input_kind == "arrays" else
                          _shuffled_queue_input(images, ids, global_batch, epochs))
        try:
            return trainer.train(write=lambda line: None, callbacks=[recorder])
        finally:
            trainer.close()

    with pytest.raises(KeyboardInterrupt):
        run(stop_at)
    assert latest_step(str(tmp_path)) == stop_at // 3 * 3  # saved only at the fences
    assert run(None).steps == 15
    per_epoch = [sorted(sum((seen[s] for s in range(e * 5 + 1, e * 5 + 6)), []))
                 for e in range(epochs)]
    for epoch in per_epoch:
        assert epoch == ids.tolist()  # each example exactly once, none skipped
