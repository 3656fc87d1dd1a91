"""The local all-reduce interface: one flat pack per device summed, the sum on
every device (bit-identical), by one algorithm (--all_reduce_spec)."""
import abc

import tensorflow as tf

from towertrain.engine.registry import Registry

from .packing import pack, unpack

_ALGORITHMS = Registry("all-reduce")
register = _ALGORITHMS.register
registered_names = _ALGORITHMS.names


def create(name):
    return _ALGORITHMS.get(name)()


class AllReduce(abc.ABC):
    name = None
    transfer_dtypes = None  # the dtypes it can move; None: any

    @abc.abstractmethod
    def sum_flats(self, flats, devices):
        """flats[d]: a 1-D tensor on devices[d] (one pack). Returns their sum,
        one tensor on each device, the same bits on every device."""

    def partial_sum(self, flats, devices):
        """The sum on one device, for a hierarchical exchange that crosses
        workers from there: (sum_device(devices), the sum on it, other outputs
        that must run). Only the central and NCCL sums have such a device."""
        raise ValueError(f"all-reduce {self.name!r} has no single device holding the sum")

    def sum_device(self, devices):
        """The device partial_sum leaves the sum on."""
        raise ValueError(f"all-reduce {self.name!r} has no single device holding the sum")

    def reduce(self, per_device, devices):
        """per_device[d][v]: device d's tensor for variable v (one dtype); the
        sums in the same structure, as one pack."""
        if len(devices) == 1:
            return [list(per_device[0])]
        flats, spec = [], None
        for device, grads in zip(devices, per_device):
            with tf.device(device):
                flat, spec = pack(grads)
                flats.append(flat)
        out = []
        for device, total in zip(devices, self.sum_flats(flats, devices)):
            with tf.device(device):
                out.append(unpack(total, spec))
        return out
