"""NCCL all-reduce on GPUs over packed gradients: one NcclAllReduce per GPU."""
import tensorflow as tf

from towertrain import private_api

from .base import AllReduce, register
from .packing import pack, unpack


@register("nccl")
class NcclAllReduce(AllReduce):
    # TensorFlow's NcclAllReduce op has no bfloat16 kernel.
    transfer_dtypes = (tf.float16, tf.float32, tf.float64)

    def reduce(self, per_device, devices):
        packed, spec = [], None
        for device, grads in zip(devices, per_device):
            with tf.device(device):
                flat, spec = pack(grads)
                packed.append(flat)
        summed = private_api.nccl_all_sum(packed)  # each output is placed on its input's device
        out = []
        for device, flat in zip(devices, summed):
            with tf.device(device):
                out.append(unpack(flat, spec))
        return out
