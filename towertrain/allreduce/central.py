"""Central all-reduce: sum on one device, copy the sum back to every device."""
import tensorflow as tf

from .base import AllReduce, register


class _CentralAllReduce(AllReduce):
    def reduction_device(self, devices):
        raise NotImplementedError

    def reduce(self, per_device, devices):
        with tf.device(self.reduction_device(devices)):
            sums = [tf.add_n(list(grads)) for grads in zip(*per_device)]
        out = []
        for device in devices:
            with tf.device(device):
                out.append([tf.identity(s) for s in sums])
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
