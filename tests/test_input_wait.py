"""Input-wait share: measured in the step from in-graph timestamps, so an
input-bound run shows its true share and a compute-bound one shows ~0."""
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.input_pipeline import from_arrays, split_to_devices
from towertrain.input_pipeline.base import Input

FEATURES, GLOBAL_BATCH = 64, 32


class SlowInput(Input):
    """Every batch takes `latency_s` to arrive: a sleep in the tf.data map, with
    no prefetch, so the wait sits in the step's get-next as with a slow reader."""

    name = "slow"

    def __init__(self, latency_s):
        self.latency_s = latency_s
        self.global_batch = GLOBAL_BATCH
        rng = np.random.default_rng(0)
        self._batch = (rng.standard_normal((GLOBAL_BATCH, FEATURES)).astype(np.float32),
                       rng.integers(0, 10, GLOBAL_BATCH).astype(np.int32))
        self._iterator = None

    def _delay(self, images, labels):
        def sleep():
            time.sleep(self.latency_s)
            return np.int32(0)
        with tf.control_dependencies([tf.py_function(sleep, [], tf.int32)]):
            return tf.identity(images), tf.identity(labels)

    def create(self, devices):
        options = tf.data.Options()
        options.experimental_optimization.inject_prefetch = False
        with tf.device("/cpu:0"):
            dataset = tf.data.Dataset.from_tensors(self._batch).repeat().map(self._delay)
            self._iterator = iter(dataset.with_options(options))

    def tower_batches(self, devices):
        with tf.device("/cpu:0"):
            batch = next(self._iterator)
        return split_to_devices(batch, devices)


class SlowCompute(keras.layers.Layer):
    """Passes its input through after sleeping `seconds`: compute of a known
    length in the tower's forward pass (the sleep releases the GIL, so the
    input's own sleep is not held up by it)."""

    def __init__(self, seconds, **kw):
        super().__init__(**kw)
        self.seconds = seconds

    def call(self, x):
        def sleep():
            time.sleep(self.seconds)
            return np.int32(0)
        with tf.control_dependencies([tf.py_function(sleep, [], tf.int32)]):
            return tf.identity(x)


def _model(compute_s=0.0):
    keras.utils.set_random_seed(0)
    layers = [keras.Input((FEATURES,)), keras.layers.Dense(32, name="h")]
    if compute_s:
        layers.append(SlowCompute(compute_s, name="slow_compute"))
    return keras.Sequential(layers + [keras.layers.Dense(10, name="out")], name="wait_net")


def true_share(latency_s, seconds):
    """The share the input really took: every step waited for one batch of
    `latency_s` (no prefetch), over the steps' wall time measured outside."""
    return latency_s * len(seconds) / sum(seconds)


# Reported against true, over a run: the reported wait also holds the input's
# own machinery (tf.data's get-next, the py_function call, the split to the
# devices: measured 1-3 ms a batch, and up to ~10 ms with the 2 CPUs busy),
# which the true value leaves out; with 150-250 ms batches that is < 0.03.
TOLERANCE = 0.05


def _steps(trainer, steps=8):
    """(reported wait, wall seconds) per step, measured around trainer.step(),
    after the first two steps (they trace and prime)."""
    waits, seconds = [], []
    for _ in range(steps):
        started = time.perf_counter()
        result = trainer.step()
        seconds.append(time.perf_counter() - started)
        waits.append(result.extras["input_wait_seconds"])
    return waits[2:], seconds[2:]


def _shares(trainer, steps=8):
    """(reported share over the steps, their wall seconds)."""
    waits, seconds = _steps(trainer, steps)
    return sum(waits) / sum(seconds), seconds


@pytest.mark.parametrize("staging_depth", [0, 1])
def test_an_input_bound_run_reports_its_true_wait_share(staging_depth):
    params = Params(device="cpu", num_gpus=2, staging_depth=staging_depth,
                    num_batches=10, num_warmup_batches=0, init_learning_rate=0.01)
    trainer = Trainer(params, model=_model(), input_source=SlowInput(0.25))
    share, seconds = _shares(trainer)
    trainer.close()
    # The step is a few ms of compute and 250 ms of input, staged or not (staging
    # cannot hide an input slower than the compute): the share is near 1.
    true = true_share(0.25, seconds)
    assert true > 0.85, seconds
    assert share == pytest.approx(true, abs=TOLERANCE), (share, true)


def test_a_balanced_run_reports_about_half():
    # 200 ms of input, then 200 ms of compute (one device, no staging): the
    # step waits half its time. Catches a wait that counts compute as input.
    params = Params(device="cpu", num_gpus=1, staging_depth=0, num_batches=10,
                    num_warmup_batches=0, init_learning_rate=0.01)
    trainer = Trainer(params, model=_model(compute_s=0.2), input_source=SlowInput(0.2))
    share, seconds = _shares(trainer)
    trainer.close()
    true = true_share(0.2, seconds)
    assert 0.4 < true < 0.6, seconds
    assert share == pytest.approx(true, abs=TOLERANCE), (share, true)


def test_a_compute_bound_run_reports_almost_no_wait():
    rng = np.random.default_rng(1)
    images = rng.standard_normal((256, 32, 32, 3)).astype(np.float32)
    labels = rng.integers(0, 10, 256).astype(np.int32)
    params = Params(model="resnet20", device="cpu", num_gpus=2, batch_size=16,
                    num_batches=10, num_warmup_batches=0)
    trainer = Trainer(params, input_source=from_arrays(images, labels, 32))
    waits, seconds = _steps(trainer)
    share = float(np.median([w / t for w, t in zip(waits, seconds)]))
    assert share < 0.1, share
    trainer.close()


def test_under_op_determinism_the_wait_is_not_reported_rather_than_made_up():
    # TensorFlow refuses tf.timestamp with op determinism on (the resume tests
    # run that way): the step must run and simply report no wait.
    from tensorflow.python.framework import config as tf_config
    tf.config.experimental.enable_op_determinism()
    try:
        params = Params(model="trivial", device="cpu", num_gpus=2, batch_size=4,
                        num_batches=2, num_warmup_batches=0)
        result = Trainer(params).step()
    finally:
        tf_config.disable_op_determinism()
    assert np.isfinite(result.loss) and "input_wait_seconds" not in result.extras
