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


def _model():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(32, name="h"),
                             keras.layers.Dense(10, name="out")], name="wait_net")


def _shares(trainer, steps=8):
    shares = []
    for _ in range(steps):
        started = time.perf_counter()
        result = trainer.step()
        shares.append(result.extras["input_wait_seconds"] / (time.perf_counter() - started))
    return shares[2:]  # the first steps trace and prime


@pytest.mark.parametrize("staging_depth", [0, 1])
def test_an_input_bound_run_reports_most_of_its_time_waiting(staging_depth):
    params = Params(device="cpu", num_gpus=2, staging_depth=staging_depth,
                    num_batches=10, num_warmup_batches=0, init_learning_rate=0.01)
    trainer = Trainer(params, model=_model(), input_source=SlowInput(0.08))
    share = float(np.median(_shares(trainer)))
    # The step is a few ms of compute and 80 ms of input, staged or not (staging
    # cannot hide an input slower than the compute): the share is near 1.
    assert 0.75 < share <= 1.0, share
    trainer.close()


def test_a_compute_bound_run_reports_almost_no_wait():
    rng = np.random.default_rng(1)
    images = rng.standard_normal((256, 32, 32, 3)).astype(np.float32)
    labels = rng.integers(0, 10, 256).astype(np.int32)
    params = Params(model="resnet20", device="cpu", num_gpus=2, batch_size=16,
                    num_batches=10, num_warmup_batches=0)
    trainer = Trainer(params, input_source=from_arrays(images, labels, 32))
    share = float(np.median(_shares(trainer)))
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
