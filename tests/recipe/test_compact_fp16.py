"""--use_fp16 --compact_gradient_transfer: the all-reduce sums in float16 (the
graph's reduction ops, and a sum where float32 summing would differ), and
clipping acts on the unscaled sum (fp16 x compact transfer x clipping)."""
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.engine.step.graph_ops import all_operations

REDUCTIONS = ("AddN", "Add", "AddV2", "NcclAllReduce")


@pytest.mark.parametrize("spec", ["psgpu"])  # a central sum; ring: test_compact_transfer
def test_the_traced_gpu_all_reduce_adds_in_float16(spec):
    params = Params(model="trivial", device="gpu", num_gpus=4, batch_size=2,
                    variable_update="replicated", all_reduce_spec=spec, use_fp16=True, allow_emulated_precision=True,
                    compact_gradient_transfer=True)
    graph = Trainer(params, check_devices=False).trace_step().graph
    # The step's scalars (loss, count) travel in a float32 pack of their own.
    adds = [op for op in all_operations(graph)
            if op.type in REDUCTIONS and "allreduce/" in op.name
            and "/extra_values/" not in op.name]
    assert adds, "no reduction in the all-reduce?"
    assert {op.outputs[0].dtype for op in adds} == {tf.float16}, [
        (op.name, op.outputs[0].dtype.name) for op in adds if op.outputs[0].dtype != tf.float16]


def test_the_sum_rounds_to_float16_after_each_add():
    # 1 + 2^-11 rounds to 1 in float16 (a tie, to even), twice; in float32 the
    # sum is 1 + 2^-10, which float16 holds: the two ways of summing differ.
    trainer = Trainer(Params(model="trivial", device="cpu", num_gpus=3,
                             variable_update="replicated", use_fp16=True, allow_emulated_precision=True,
                             compact_gradient_transfer=True))
    devices = trainer.devices
    values = [1.0, 2.0 ** -11, 2.0 ** -11]
    half_sum = np.float16(0)
    for value in values:  # device order, each add rounded to float16
        half_sum = np.float16(half_sum + np.float16(value))
    float32_sum = np.float16(np.sum(np.float32(values)))
    assert half_sum != float32_sum, (half_sum, float32_sum)

    @tf.function
    def reduce():
        per_device = []
        for device, value in zip(devices, values):
            with tf.device(device):
                per_device.append([tf.fill([4], tf.constant(value, tf.float32))])
        return trainer.variables.all_reduce.reduce(per_device, devices)

    for (summed,) in reduce():
        assert summed.dtype == tf.float32
        np.testing.assert_array_equal(summed.numpy(), np.full([4], half_sum, np.float32))


CLIP, RATE, STEPS = 1e-3, 0.5, 3


def test_fp16_compact_transfer_clips_the_unscaled_global_norm():
    # SGD with an active global-norm clip: every update has norm rate x clip,
    # whatever the loss scale (128 by default) the gradients crossed with.
    params = Params(model="trivial", device="cpu", num_gpus=2, batch_size=4,
                    variable_update="replicated", optimizer="sgd",
                    init_learning_rate=RATE, use_fp16=True, allow_emulated_precision=True, compact_gradient_transfer=True,
                    global_norm_clip=CLIP)
    trainer = Trainer(params)
    copies = trainer.variables.trainable_copies()
    before = [v.numpy() for v in copies[0]]
    for _ in range(STEPS):
        assert trainer.step().finite
        after = [v.numpy() for v in copies[0]]
        norm = np.sqrt(sum(np.sum((a.astype(np.float64) - b) ** 2)
                           for a, b in zip(after, before)))
        assert norm == pytest.approx(RATE * CLIP, rel=0.02), norm
        before = after
    for copy in copies[1:]:  # the copies clipped identical bits
        for mine, first in zip(copy, copies[0]):
            np.testing.assert_array_equal(mine.numpy(), first.numpy())
