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
from . import base, flow, packing
from .compact import CompactTransfer


class LocalExchange:
    """Packs summed over one process's devices by one algorithm."""

    def __init__(self, algorithm, num_packs=0, pack_bytes=None):
        self.algorithm, self.num_packs, self.pack_bytes = algorithm, num_packs, pack_bytes
        self.name = algorithm.name
        # Extra values (the step's scalars) never travel in a half-precision pack.
        self.plain = algorithm.inner if isinstance(algorithm, CompactTransfer) else algorithm

    def packs(self, grads):
        """The pack plan of one device's gradient list: one pack per dtype, or
        cut as the repacking flags ask."""
        return packing.plan(grads, self.num_packs, self.pack_bytes)

    def exchange(self, per_device, devices, extra_values=None, check=True):
        """flow.Exchanged of the gradient lists summed over `devices`."""
        packs = self.packs(per_device[0])
        # A half-precision transfer: the extra values travel in a float32 pack of
        # their own, summed by the plain algorithm.
        apart = self.plain is not self.algorithm

        def sum_pack(k, flats):
            algorithm = self.plain if apart and k == len(packs) else self.algorithm
            return algorithm.sum_flats(flats, devices)
        return flow.exchange_packs(per_device, devices, packs, sum_pack, extra_values, check,
                                   extra_values_apart=apart)

    def reduce(self, per_device, devices):
        """The summed gradient lists alone (tests, tools)."""
        if len(devices) == 1:
            return [list(per_device[0])]
        return self.exchange(per_device, devices, check=False).per_device


def create(name, compact_dtype=None, num_packs=0, pack_bytes=None):
    algorithm = base.create(name)
    if compact_dtype is not None:
        algorithm = CompactTransfer(algorithm, compact_dtype)
    return LocalExchange(algorithm, num_packs, pack_bytes)
