"""Splitting a global batch into per-device sub-batches on the CPU."""
import collections

import tensorflow as tf


def split_sizes(global_batch: int, num_devices: int) -> list:
    """Sizes as even as possible, the first devices taking the remainder.

    >>> split_sizes(10, 4)
    [3, 3, 2, 2]
    """
    if num_devices < 1:
        raise ValueError(f"num_devices must be >= 1, got {num_devices}")
    base, extra = divmod(global_batch, num_devices)
    return [base + (1 if i < extra else 0) for i in range(num_devices)]


def split_to_devices(tensors, devices):
    """Slices each tensor's batch dimension on the CPU, one slice per device.

    `tensors` is a tuple (images, labels, ...) of one global batch. Returns a
    list with one tuple per device, each already copied to its device, so a
    device receives only its own slice. When the batch size is static the
    sizes are too, so a device with no examples gets a statically empty slice
    the engine can skip.
    """
    batch = tensors[0].shape[0]
    with tf.device("/cpu:0"):
        if batch is not None:
            sizes = split_sizes(batch, len(devices))
        else:
            dynamic = tf.shape(tensors[0])[0]
            n = len(devices)
            sizes = [dynamic // n + tf.cast(i < dynamic % n, tf.int32) for i in range(n)]
            sizes = tf.stack(sizes)
        pieces = [tf.split(t, sizes, num=len(devices), axis=0) for t in tensors]
    per_device = []
    for i, device in enumerate(devices):
        with tf.device(device):
            per_device.append(tuple(tf.identity(piece[i]) for piece in pieces))
    return per_device


class WorkerShare(collections.namedtuple("WorkerShare",
                                         "num_workers task_index towers_per_worker")):
    """One worker's part of every global batch in a multi-worker run: the rows
    of its towers when the batch is split over all num_workers x
    towers_per_worker towers as split_sizes splits it (the first towers take
    the remainder), so each worker's towers get exactly the rows one process
    holding every tower would give them. A value readers take; the Input
    that yields a worker's batches is towertrain.engine.feed.input_factory's
    WorkerInput."""

    @property
    def num_towers(self):
        return self.num_workers * self.towers_per_worker

    @property
    def first_tower(self):
        return self.task_index * self.towers_per_worker

    def rows(self, batch_size):
        """(start, end) of this worker's rows in a batch of `batch_size` (a tensor)."""
        batch_size = tf.convert_to_tensor(batch_size)
        base, extra = batch_size // self.num_towers, batch_size % self.num_towers

        def start(tower):
            tower = tf.constant(tower, batch_size.dtype)
            return tower * base + tf.minimum(tower, extra)
        return start(self.first_tower), start(self.first_tower + self.towers_per_worker)

    def describe(self):
        last = self.first_tower + self.towers_per_worker - 1
        towers = (f"tower {last}" if last == self.first_tower
                  else f"towers {self.first_tower}-{last}")
        return f"{towers} of {self.num_towers}"
