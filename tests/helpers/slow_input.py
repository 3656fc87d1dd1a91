"""An input whose batches take a known time to arrive and a layer whose compute
takes a known time: for checking the reported input-wait share."""
import time

import keras
import numpy as np
import tensorflow as tf

from towertrain.input_pipeline import split_to_devices
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

    def call(self, x, training=None):
        if not training:
            return x  # the engine's up-front probe of the model's outputs is not a step
        def sleep():
            time.sleep(self.seconds)
            return np.int32(0)
        with tf.control_dependencies([tf.py_function(sleep, [], tf.int32)]):
            return tf.identity(x)


def model(compute_s=0.0):
    keras.utils.set_random_seed(0)
    layers = [keras.Input((FEATURES,)), keras.layers.Dense(32, name="h")]
    if compute_s:
        layers.append(SlowCompute(compute_s, name="slow_compute"))
    return keras.Sequential(layers + [keras.layers.Dense(10, name="out")], name="wait_net")


def true_share(latency_s, seconds):
    """The share the input really took: every step waited for one batch of
    `latency_s` (no prefetch), over the steps' wall time measured outside."""
    return latency_s * len(seconds) / sum(seconds)


TOLERANCE = 0.05

