"""Inputs a user relies on without looking: the queue input keeps going past an
epoch end, closing a trainer stops its feeder threads (also blocked ones), and
the staging counters stay true to the areas after a step fails, so the next
step never blocks."""
import os
import subprocess
import sys
import threading
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.callbacks import Callback
from towertrain.input_pipeline import DatasetInput, InputError, QueueInput
from towertrain.engine.feed.staging import StagedInput

from helpers import cifar_files

FEEDER_PREFIX = "towertrain_feeder"
NO_HANG_SECS = 30


def _feeders():
    return {t for t in threading.enumerate() if t.name.startswith(FEEDER_PREFIX) and t.is_alive()}


def _id_model(num_classes):
    return keras.Sequential([keras.Input((2, 2, 1)), keras.layers.Flatten(),
                             keras.layers.Dense(num_classes)])


# ---------------------------------------------------------------------------
# 8. --input=queue without --num_epochs runs on past the first epoch's end.

@pytest.mark.slow
def test_queue_input_from_the_cli_runs_past_uneven_epoch_ends(tmp_path):
    data_dir = cifar_files.write_dataset(str(tmp_path / "cifar"), num_train=100, num_test=10)
    done = subprocess.run(
        [sys.executable, "-m", "towertrain", "--model=trivial", "--data_name=cifar10",
         f"--data_dir={data_dir}", "--input=queue", "--device=cpu", "--num_gpus=2",
         "--batch_size=16", "--num_batches=10", "--num_warmup_batches=0", "--display_every=1"],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="3"))
    # 100 examples / 32 a step: 4 steps an epoch (the 4th holds 4), so 10 steps
    # cross two epoch ends.
    assert done.returncode == 0, done.stderr
    step_lines = [line for line in done.stdout.splitlines() if "\timages/sec" in line]
    assert [int(line.split("\t")[0]) for line in step_lines] == list(range(1, 11))
    assert "towertrain: error" not in done.stderr


# ---------------------------------------------------------------------------
# 9. Closing a trainer stops the queue's feeder threads.

def _endless_source(epoch):
    for i in range(20):
        yield np.full((2, 2, 1), i + epoch, np.float32), i % 4


def _queue_trainer(capacity=4, num_threads=2, staging_depth=1):
    source = QueueInput(_endless_source, (2, 2, 1), 8, num_threads=num_threads,
                        capacity=capacity)
    params = Params(device="cpu", num_gpus=2, num_warmup_batches=0, num_batches=5,
                    staging_depth=staging_depth, init_learning_rate=0.01)
    return Trainer(params, model=_id_model(4), input_source=source), source


@pytest.mark.parametrize("staging_depth", [0, 1])
def test_closing_the_trainer_stops_the_feeder_threads(staging_depth):
    earlier = _feeders()
    trainer, _ = _queue_trainer(staging_depth=staging_depth)
    assert not _feeders() - earlier  # the feeders start with the run, not before
    trainer.begin(0)
    mine = _feeders() - earlier
    assert len(mine) == 2
    for _ in range(3):
        assert trainer.step().finite
    trainer.close()
    assert not any(t.is_alive() for t in mine)
    trainer.close()  # twice is fine


def test_closing_stops_feeders_blocked_on_a_full_queue():
    earlier = _feeders()
    trainer, source = _queue_trainer(capacity=1, num_threads=2)
    trainer.begin(0)
    mine = _feeders() - earlier
    # Nothing dequeues: the queue fills and both feeders block in enqueue.
    deadline = time.monotonic() + NO_HANG_SECS
    while int(source._queue.size()) < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert int(source._queue.size()) == 1
    assert len(mine) == 2 and all(t.is_alive() for t in mine)
    started = time.monotonic()
    trainer.close()
    assert time.monotonic() - started < QueueInput.JOIN_TIMEOUT_SECS
    assert not any(t.is_alive() for t in mine)


# ---------------------------------------------------------------------------
# 10. After a step fails, the staging counters match the areas and the next
# step does not block.

def _next_step_does_not_hang(trainer):
    """Runs one step in a thread; it may raise (the data may be exhausted) but
    must finish. A step blocked in Unstage is released before failing."""
    outcome = {}

    def run():
        try:
            outcome["result"] = trainer.step()
        except Exception as err:  # noqa: BLE001 - any end but a hang is fine here
            outcome["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(NO_HANG_SECS)
    if thread.is_alive():
        trainer.input._prime_fn()  # stage a batch so the blocked Unstage returns
        thread.join(NO_HANG_SECS)
        pytest.fail(f"the step after the failure blocked for {NO_HANG_SECS} s")
    error = outcome.get("error")
    assert error is None or isinstance(error, (tf.errors.OutOfRangeError, InputError)), error
    return outcome


def _assert_counters_match_the_areas(trainer):
    assert isinstance(trainer.input, StagedInput)
    sizes = trainer.input.sizes()
    assert all(size == trainer.input.staged for size in sizes), (trainer.input.staged, sizes)


def _failing_batches(bad_batch, num_examples=48, global_batch=8, description=None):
    """A DatasetInput whose batch number `bad_batch` fails an assertion."""
    ids = np.arange(num_examples, dtype=np.int32)
    images = np.repeat(ids.astype(np.float32), 4).reshape(-1, 2, 2, 1)

    def check(images, labels):
        bad = (labels >= bad_batch * global_batch) & (labels < (bad_batch + 1) * global_batch)
        with tf.control_dependencies([tf.debugging.Assert(
                tf.logical_not(tf.reduce_any(bad)), [labels], name="bad_batch")]):
            return tf.identity(images), tf.identity(labels)

    dataset = tf.data.Dataset.from_tensor_slices((images, ids)).batch(global_batch).map(check)
    return DatasetInput(dataset, global_batch, description=description)


@pytest.mark.parametrize("bad_batch", [0, 1, 2])
@pytest.mark.parametrize("description", [None, "test data"])
def test_a_failing_batch_leaves_true_counters_and_the_next_step_runs(bad_batch, description):
    params = Params(device="cpu", num_gpus=2, num_warmup_batches=0, num_batches=5,
                    init_learning_rate=0.01)
    trainer = Trainer(params, model=_id_model(48),
                      input_source=_failing_batches(bad_batch, description=description))
    # One line naming the input (its description, or the input's class) and the reason.
    named = "DatasetInput .*assertion failed" if description is None else "test data"
    try:
        with pytest.raises(InputError, match=named):
            for _ in range(bad_batch + 1):
                trainer.step()
        _assert_counters_match_the_areas(trainer)
        outcome = _next_step_does_not_hang(trainer)
        assert "result" in outcome, outcome  # the data goes on after the bad batch
        _assert_counters_match_the_areas(trainer)
    finally:
        trainer.close()


def _loss_failing_on_call(fail_on):
    calls = []

    def maybe_fail(x):
        calls.append(1)
        if len(calls) == fail_on:
            raise RuntimeError(f"loss callback failed on call {fail_on}")
        return np.float32(0)

    def loss_fn(labels, logits):
        zero = tf.py_function(maybe_fail, [tf.constant(0.0)], tf.float32)
        return keras.losses.sparse_categorical_crossentropy(
            labels, logits, from_logits=True) + zero
    return loss_fn


def _endless_arrays_input():
    ids = np.arange(16, dtype=np.int32)
    images = np.repeat(ids.astype(np.float32), 4).reshape(-1, 2, 2, 1)
    dataset = tf.data.Dataset.from_tensor_slices((images, ids % 4)).repeat().batch(8)
    return DatasetInput(dataset, 8)


@pytest.mark.parametrize("fail_on", [1, 4])  # tower 0 of step 1; tower 1 of step 2
def test_a_python_error_inside_the_step_leaves_true_counters(fail_on):
    params = Params(device="cpu", num_gpus=2, num_warmup_batches=0, num_batches=5,
                    init_learning_rate=0.01)
    trainer = Trainer(params, model=_id_model(4), input_source=_endless_arrays_input(),
                      loss_fn=_loss_failing_on_call(fail_on))
    try:
        with pytest.raises(tf.errors.OpError, match="loss callback failed"):
            for _ in range(3):
                trainer.step()
        _assert_counters_match_the_areas(trainer)
        assert "result" in _next_step_does_not_hang(trainer)
        _assert_counters_match_the_areas(trainer)
    finally:
        trainer.close()


class _FailAfter(Callback):
    def __init__(self, step):
        self.step = step

    def after_step(self, step, result, seconds):
        if step == self.step:
            raise RuntimeError(f"callback failed after step {step}")


def test_a_callback_error_between_steps_leaves_true_counters():
    params = Params(device="cpu", num_gpus=2, num_warmup_batches=0, num_batches=6,
                    init_learning_rate=0.01, staging_depth=2, display_every=100)
    trainer = Trainer(params, model=_id_model(4), input_source=_endless_arrays_input())
    try:
        with pytest.raises(RuntimeError, match="callback failed after step 2"):
            trainer.train(write=lambda line: None, callbacks=[_FailAfter(2)])
        assert trainer.global_step() == 2
        _assert_counters_match_the_areas(trainer)
        assert "result" in _next_step_does_not_hang(trainer)
        _assert_counters_match_the_areas(trainer)
    finally:
        trainer.close()
