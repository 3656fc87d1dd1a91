"""NCCL all-reduce on GPUs: one NcclAllReduce per GPU per pack."""
import tensorflow as tf

from towertrain import private_api

from .base import AllReduce, register


@register("nccl")
class NcclAllReduce(AllReduce):
    # TensorFlow's NcclAllReduce op has no bfloat16 kernel.
    transfer_dtypes = (tf.float16, tf.float32, tf.float64)

    def sum_flats(self, flats, devices):
        if len(devices) == 1:
            return [flats[0]]
        return private_api.nccl_all_sum(flats)  # each output on its input's device

    def sum_device(self, devices):
        return devices[0]

    def partial_sum(self, flats, devices):
        """Every GPU's output must be used: an NcclAllReduce whose output nothing
        reads is pruned from the step (an async stateful op), and the members
        that were kept then wait for it forever."""
        if len(devices) == 1:
            return devices[0], flats[0], []
        summed = self.sum_flats(flats, devices)
        return self.sum_device(devices), summed[0], summed[1:]
