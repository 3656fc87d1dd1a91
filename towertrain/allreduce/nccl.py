"""NCCL all-reduce on GPUs: one NcclAllReduce op per device per tensor."""
from tensorflow.python.ops import nccl_ops  # no public API exposes NcclAllReduce

from .base import AllReduce, register


@register("nccl")
class NcclAllReduce(AllReduce):
    def reduce(self, per_device, devices):
        by_variable = [nccl_ops.all_sum(list(grads)) for grads in zip(*per_device)]
        return [list(per_var) for per_var in zip(*by_variable)]
