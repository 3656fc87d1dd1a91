"""Central all-reduce: the packs summed on one device, the sum copied back to
every device (one transfer and one sum per device per pack)."""
import tensorflow as tf

from .base import AllReduce, register


class _CentralAllReduce(AllReduce):
    def reduction_device(self, devices):
        raise NotImplementedError

    def sum_device(self, devices):
        return devices[0] if len(devices) == 1 else self.reduction_device(devices)

    def partial_sum(self, flats, devices):
        if len(devices) == 1:
            return devices[0], flats[0], []
        device = self.sum_device(devices)
        with tf.device(device):
            return device, tf.add_n(flats), []

    def sum_flats(self, flats, devices):
        if len(devices) == 1:
            return [flats[0]]
        _, total, _ = self.partial_sum(flats, devices)
        out = []
        for device in devices:
            with tf.device(device):
                out.append(tf.identity(total))
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
