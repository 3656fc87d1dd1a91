"""Synthetic input: random images and labels generated once on each device.

As in tf_cnn_benchmarks, the data never moves during a step, so the numbers
measure the model and the gradient exchange alone. Each tower's batch is a
function of the seed and its global tower index alone (the same every step),
so any topology with the same towers and per-tower batch trains on the same
data: 2 workers x 1 device as 1 process x 2.
"""
import numpy as np
import tensorflow as tf

from .base import EvalData, Input
from .slicing import split_sizes

# Batches in a synthetic eval set; labelled 'synthetic' wherever it is reported.
SYNTHETIC_EVAL_BATCHES = 10


class SyntheticInput(Input):
    """Per-device constant batches; `global_batch` examples per step.
    tower_indices: each local device's index among the cluster's towers
    (default 0, 1, ...: one process)."""

    name = "synthetic"
    stage = False  # the data already lives on each device; staging would only copy it

    def __init__(self, image_shape, num_classes, global_batch, seed=0, tower_indices=None):
        self.image_shape = tuple(image_shape)
        self.num_classes = num_classes
        self.global_batch = global_batch
        self.seed = seed
        self.tower_indices = tower_indices
        self._batches = None

    def create(self, devices):
        """Makes the per-device data; call once, eagerly, before tracing a step."""
        self._batches = []
        towers = self.tower_indices or range(len(devices))
        for i, device, size in zip(towers, devices, split_sizes(self.global_batch,
                                                                len(devices))):
            with tf.device(device):
                images = tf.random.stateless_truncated_normal(
                    (size,) + self.image_shape, seed=(self.seed, i))
                labels = tf.random.stateless_uniform(
                    (size,), seed=(self.seed, 1000 + i), minval=0,
                    maxval=self.num_classes, dtype=tf.int32)
                self._batches.append((tf.Variable(images, trainable=False, name="images"),
                                      tf.Variable(labels, trainable=False, name="labels")))

    def tower_batches(self, devices):
        """Per-device (images, labels); called inside the step function."""
        out = []
        for device, (images, labels) in zip(devices, self._batches):
            with tf.device(device):
                out.append((tf.identity(images), tf.identity(labels)))
        return out

    def eval_data(self, batch_size):
        """Random images and labels, reported as 'synthetic': there is no real split."""
        rng = np.random.default_rng(self.seed)
        count = SYNTHETIC_EVAL_BATCHES * batch_size
        images = rng.standard_normal((count,) + self.image_shape).astype(np.float32)
        labels = rng.integers(0, self.num_classes, count).astype(np.int32)
        dataset = tf.data.Dataset.from_tensor_slices((images, labels)).batch(batch_size)
        return EvalData(dataset, count, "synthetic", batch_size)
