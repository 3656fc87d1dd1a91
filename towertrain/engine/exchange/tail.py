"""The step's scalar tail: each device's share of the loss, its examples and
this worker's stop requests, sent in the exchange's last float32 pack
(towertrain.engine.exchange.flow), so every device of every worker reads the
cluster's totals from its own copy of the sums: no collective of their own,
none on the host, none between the exchange and the update.

Counts travel as float32: exact below 2**24 examples per step.
"""
import collections

import tensorflow as tf

from .flow import LAST

NAME = "scalars"

Totals = collections.namedtuple("Totals", "loss count stops")


def extra_values(devices, losses, counts, stops=None):
    """{NAME: (LAST, one float32 [loss, examples, stop requests] per device)}.
    losses[d], counts[d]: device d's share (None: none); stops: this worker's
    stop flag, carried by device 0 alone (None: 0)."""
    out = []
    for d, device in enumerate(devices):
        with tf.device(device):
            values = [losses[d], counts[d], stops if d == 0 else None]
            out.append(tf.stack([tf.zeros([]) if v is None else tf.cast(v, tf.float32)
                                 for v in values]))
    return {NAME: (LAST, out)}


def totals(summed):
    """Totals read from one device's summed tail (on that device)."""
    return Totals(summed[0], tf.cast(tf.round(summed[1]), tf.int32),
                  tf.cast(tf.round(summed[2]), tf.int32))


TIMING = "timing"


def timing_values(devices, task_index, num_workers, reach, wait):
    """{TIMING: (LAST, a float32 vector of 2 x num_workers per device)}: this
    worker's seconds from the step's start to its towers' end (the exchange's
    start) and its input wait, at its own two slots of device 0's vector
    (zeros elsewhere), so the sum holds every worker's pair on every device:
    the straggler report's data, in the collective the step already makes."""
    out = []
    for d, device in enumerate(devices):
        with tf.device(device):
            if d == 0:
                pair = tf.stack([tf.cast(reach, tf.float32), tf.cast(wait, tf.float32)])
                out.append(tf.pad(pair, [[2 * task_index, 2 * (num_workers - task_index - 1)]]))
            else:
                out.append(tf.zeros([2 * num_workers]))
    return {TIMING: (LAST, out)}
