"""Input from a tf.data dataset of global batches, sliced on the CPU."""
import numpy as np
import tensorflow as tf

from .slicing import split_to_devices


class DatasetInput:
    """Wraps a dataset whose elements are global (images, labels) batches."""

    name = "dataset"

    def __init__(self, dataset):
        self.dataset = dataset
        self._iterator = None

    def create(self, devices):
        del devices  # the global batch is assembled on the CPU and split per step
        with tf.device("/cpu:0"):
            self._iterator = iter(self.dataset)

    def tower_batches(self, devices):
        with tf.device("/cpu:0"):
            batch = next(self._iterator)
        return split_to_devices(batch, devices)


def from_arrays(images, labels, global_batch, shuffle=False, seed=0, repeat=True):
    """A DatasetInput over in-memory numpy arrays (global batches of `global_batch`)."""
    images = np.asarray(images)
    labels = np.asarray(labels)
    if len(images) != len(labels):
        raise ValueError(f"images ({len(images)}) and labels ({len(labels)}) differ in length")
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    if shuffle:
        dataset = dataset.shuffle(len(images), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.batch(global_batch, drop_remainder=repeat)
    return DatasetInput(dataset.prefetch(tf.data.AUTOTUNE))
