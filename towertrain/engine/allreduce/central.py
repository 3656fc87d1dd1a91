"""Central all-reduce: sum on one device, copy the sum back to every device.

Gradients travel packed into one flat vector per device, so the exchange is
one transfer and one sum per device rather than one per variable.
"""
import tensorflow as tf

from .base import AllReduce, register
from .packing import pack, unpack


class _CentralAllReduce(AllReduce):
    def reduction_device(self, devices):
        raise NotImplementedError

    def reduce(self, per_device, devices):
        if len(devices) == 1:
            return [list(per_device[0])]
        packed, spec = [], None
        for device, grads in zip(devices, per_device):
            with tf.device(device):
                flat, spec = pack(grads)
                packed.append(flat)
        with tf.device(self.reduction_device(devices)):
            total = tf.add_n(packed)
        out = []
        for device in devices:
            with tf.device(device):
                out.append(unpack(tf.identity(total), spec))
        return out


@register("pscpu")
class PsCpuAllReduce(_CentralAllReduce):
    """Sums on the host CPU."""

    def reduction_device(self, devices):
        return "/cpu:0"


@register("psgpu")
class PsGpuAllReduce(_CentralAllReduce):
    """Sums on the first GPU."""

    def reduction_device(self, devices):
        return devices[0]
