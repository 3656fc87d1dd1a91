"""--gradient_repacking=N, --gradient_pack_mb=M: any all-reduce algorithm,
run once per pack.

The gradients are cut into packs (towertrain.engine.allreduce.packing.plan:
N per dtype, or packs of at most M MB; about equal bytes, reverse layer
order) and each pack is reduced
by the wrapped algorithm on its own. A pack's reduction reads only its own
gradients, so in the step's tf.function the executor starts it as soon as
the backward pass has produced them, while earlier layers' backward still
runs (tests/engine/test_exchange_graph.py walks the graph to prove it).
Summing a pack is summing its elements, so the result is the one-pack sum:
the same additions, in the same device order.
"""
import tensorflow as tf

from .base import AllReduce
from . import packing


class Repacked(AllReduce):
    """`inner`'s all-reduce, one call per pack."""

    def __init__(self, inner, num_packs, pack_bytes=None):
        if num_packs < 1 and not pack_bytes:
            raise ValueError(f"repacking needs >= 1 pack or a pack size, got {num_packs}")
        self.inner, self.num_packs, self.pack_bytes = inner, num_packs, pack_bytes
        self.name = inner.name

    def reduce(self, per_device, devices):
        if len(devices) == 1:
            return self.inner.reduce(per_device, devices)
        packs = packing.plan(per_device[0], self.num_packs, self.pack_bytes)
        summed = [[] for _ in devices]  # summed[d][k]: pack k's sum on device d
        for k, p in enumerate(packs):
            with tf.name_scope(f"pack{k}"):
                flats = []
                for device, grads in zip(devices, per_device):
                    with tf.device(device):
                        flats.append([packing.gather(grads, p)])
                for d, (flat,) in enumerate(self.inner.reduce(flats, devices)):
                    summed[d].append(flat)
        out = []
        for device, flats, grads in zip(devices, summed, per_device):
            with tf.device(device):
                out.append(packing.scatter(flats, packs, grads))
        return out
