"""The exchange of --variable_update=replicated: each pack summed over this
process's devices by the --all_reduce_spec algorithm (optionally in half
precision, --compact_gradient_transfer), packed as --gradient_repacking /
--gradient_pack_mb ask.

A pack's sum reads only its own gradients, so in the step's tf.function the
executor starts it as soon as the backward pass has produced them, while
earlier layers' backward still runs (tests/engine/test_exchange_graph.py
walks the graph to prove it). Summing a pack is summing its elements, so the
result is the one-pack sum: the same additions, in the same device order.
"""
import tensorflow as tf

from . import base, flow, packing
from .compact import CompactTransfer


class LocalExchange:
    """Packs summed over one process's devices by one algorithm."""

    def __init__(self, algorithm, num_packs=0, pack_bytes=None):
        self.algorithm, self.num_packs, self.pack_bytes = algorithm, num_packs, pack_bytes
        self.name = algorithm.name
        # Riders (the step's scalars) never travel in a half-precision pack.
        self.plain = algorithm.inner if isinstance(algorithm, CompactTransfer) else algorithm

    def packs(self, grads):
        """The pack plan of one device's gradient list: one pack per dtype, or
        cut as the repacking flags ask."""
        return packing.plan(grads, self.num_packs, self.pack_bytes)

    def exchange(self, per_device, devices, riders=None, check=True):
        """flow.Exchanged of the gradient lists summed over `devices`."""
        packs = self.packs(per_device[0])
        if riders and self.plain is not self.algorithm:
            return _separate_riders(per_device, devices, packs, self.algorithm,
                                    self.plain, riders, check)
        return flow.exchange_packs(
            per_device, devices, packs,
            lambda k, flats: self.algorithm.sum_flats(flats, devices), riders, check)

    def reduce(self, per_device, devices):
        """The summed gradient lists alone (tests, tools)."""
        if len(devices) == 1:
            return [list(per_device[0])]
        return self.exchange(per_device, devices, check=False).per_device


def _separate_riders(per_device, devices, packs, algorithm, plain, riders, check):
    """Compact transfer: the packs in half precision, the riders in a float32
    pack of their own, both checked."""
    grads = flow.exchange_packs(per_device, devices, packs,
                                lambda k, flats: algorithm.sum_flats(flats, devices),
                                None, check)
    names = list(riders)
    flats = []
    with tf.name_scope("riders"):
        for d, device in enumerate(devices):
            with tf.device(device):
                flats.append(tf.concat([riders[n][1][d] for n in names], 0))
        sums = plain.sum_flats(flats, devices)
    rider_sums, finite = {n: [] for n in names}, grads.finite
    for d, device in enumerate(devices):
        with tf.device(device):
            at = 0
            for n in names:
                width = int(riders[n][1][d].shape[0])
                rider_sums[n].append(sums[d][at:at + width])
                at += width
            if check:
                finite[d] = tf.logical_and(finite[d], tf.reduce_all(tf.math.is_finite(sums[d])))
    return grads._replace(finite=finite, riders=rider_sums)


def create(name, compact_dtype=None, num_packs=0, pack_bytes=None):
    algorithm = base.create(name)
    if compact_dtype is not None:
        algorithm = CompactTransfer(algorithm, compact_dtype)
    return LocalExchange(algorithm, num_packs, pack_bytes)
