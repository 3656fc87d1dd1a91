"""One ordering chain per GPU for the collectives of a step.

NCCL launches in the order kernels reach a GPU's stream; two collectives
launched in one order on one worker and the other order on another wait on
each other forever (NCCL has no timeout). The collective ops with an
ordering token are chained by auto control dependencies only among the ops
sharing that token, and NcclAllReduce takes no token at all. So on a GPU
every collective is made to wait, by an explicit control edge, for the one
built before it on that device: one total order per GPU, the program order,
which is the same on every worker because every worker builds the same step.

CPU devices keep several chains (the gradient packs' and the scalars'): the
ring over gRPC matches collectives by instance key and never deadlocks on
their order, and separate chains let packs overlap the backward pass.
"""
import weakref

import tensorflow as tf


def device_type(device):
    """'GPU' or 'CPU' of a device name such as '/gpu:1'."""
    return tf.DeviceSpec.from_string(device).device_type.upper()


def is_gpu(device):
    return device_type(device) == "GPU"


def _canonical(device):
    return tf.DeviceSpec.from_string(device).to_string().upper()


class DeviceChains:
    """Per traced graph, the last collective built on each GPU."""

    def __init__(self):
        self._ends = weakref.WeakKeyDictionary()

    def run(self, devices, build):
        """build() -> one output per device of `devices`, in order; each output's
        op waits for the previous collective on its device (GPUs only)."""
        if not any(is_gpu(d) for d in devices):
            return build()
        ends = self._ends.setdefault(tf.compat.v1.get_default_graph(), {})
        keys = [_canonical(d) for d in devices]
        with tf.control_dependencies([ends[k] for k in keys if k in ends]):
            outputs = build()
        if len(outputs) != len(devices):
            raise ValueError(f"{len(outputs)} outputs for {len(devices)} devices")
        for device, key, output in zip(devices, keys, outputs):
            if is_gpu(device):
                ends[key] = output.op
        return outputs
