"""Central all-reduce: sum on one device, copy the sum back to every device.

Between GPUs (or a GPU and the host) gradients travel packed into one flat
vector per device, so the exchange is one transfer and one sum per device
rather than one per variable. Logical CPU devices share the host's memory:
there a tensor crosses devices without a copy and a pack would only copy
every gradient twice (concat, split), so each variable is summed on its own,
as tf_cnn_benchmarks does; the sums are the same additions in the same
order, so the same bits.
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
        target = self.reduction_device(devices)
        if all(tf.DeviceSpec.from_string(d).device_type.upper() == "CPU"
               for d in devices + [target]):
            with tf.device(target):
                sums = [tf.add_n(list(grads)) for grads in zip(*per_device)]
            out = []
            for device in devices:
                with tf.device(device):
                    out.append([tf.identity(total) for total in sums])
            return out
        packed, spec = [], None
        for device, grads in zip(devices, per_device):
            with tf.device(device):
                flat, spec = pack(grads)
                packed.append(flat)
        with tf.device(target):
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
