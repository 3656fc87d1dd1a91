"""--compact_gradient_transfer: gradients cross devices in float16 (bfloat16
with --use_bf16) and reach the optimizer as float32, within half-precision
rounding of the float32 all-reduce and still bit-identical on every copy."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.engine import exchange
from towertrain.engine.step.graph_ops import all_operations
from towertrain.input_pipeline import from_arrays
from helpers.sweep import full_sweep_only

SHAPES = [(3, 4), (5,), (), (2, 1, 3), (300,)]
HALF = {"float16": np.float16, "bfloat16": tf.bfloat16.as_numpy_dtype}
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}  # spacing just above 1


def _reduce(algorithm, values, devices):
    @tf.function
    def run():
        per_device = []
        for device, grads in zip(devices, values):
            with tf.device(device):
                per_device.append([tf.constant(g) for g in grads])
        return algorithm.reduce(per_device, devices)
    return run()


def _values(num_devices, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(shape).astype(np.float32) for shape in SHAPES]
            for _ in range(num_devices)]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name,num_devices", [("pscpu", 2), ("pscpu", 4), ("ring", 3),
                                              ("ring", 4)])
def test_compact_sum_is_half_rounded_float32_and_identical(name, num_devices, dtype):
    devices = [f"/cpu:{i}" for i in range(num_devices)]
    values = _values(num_devices)
    result = _reduce(exchange.local_algorithm(name, compact_dtype=dtype), values, devices)
    for v, shape in enumerate(SHAPES):
        exact = np.sum([values[d][v] for d in range(num_devices)], axis=0)
        bound = np.sum([np.abs(values[d][v]) for d in range(num_devices)], axis=0)
        first = result[0][v].numpy()
        for d in range(num_devices):
            got = result[d][v]
            assert got.dtype == tf.float32 and got.shape == shape  # float32 again
            np.testing.assert_array_equal(got.numpy(), first)  # bit-identical
        # Rounded to the transfer dtype: every value is exactly a half value...
        np.testing.assert_array_equal(first.astype(HALF[dtype]).astype(np.float32), first)
        # ...and the same sum (no 1/N, every device counted) within its rounding:
        # each input and each of the N - 1 adds rounds once, by <= eps/2 relative.
        assert np.all(np.abs(first - exact) <= num_devices * EPS[dtype] / 2 * bound + 1e-30)


def test_one_device_passes_gradients_through_unrounded():
    values = _values(1)
    result = _reduce(exchange.local_algorithm("ring", compact_dtype="float16"), values, ["/cpu:0"])
    for got, original in zip(result[0], values[0]):
        np.testing.assert_array_equal(got.numpy(), original)


def test_float16_overflow_is_inf_not_clipped():
    # 40000 fits float16 (max 65504); 2 x 40000 does not: the sum says so.
    values = [[np.full((3,), 40000.0, np.float32)] for _ in range(2)]
    result = _reduce(exchange.local_algorithm("pscpu", compact_dtype="float16"), values,
                     ["/cpu:0", "/cpu:1"])
    assert np.all(np.isposinf(result[0][0].numpy()))


def test_nccl_refuses_bfloat16_transfer():
    assert exchange.local_algorithm("nccl", compact_dtype="float16").algorithm.dtype == tf.float16
    with pytest.raises(ValueError, match="'nccl' cannot transfer bfloat16"):
        exchange.local_algorithm("nccl", compact_dtype="bfloat16")


# --- What crosses devices in the traced GPU step --------------------------------

def _gpu_graph(all_reduce_spec, use_bf16):
    params = Params(model="trivial", device="gpu", num_gpus=4, batch_size=2,
                    variable_update="replicated", all_reduce_spec=all_reduce_spec,
                    compact_gradient_transfer=True, use_bf16=use_bf16)
    return Trainer(params, check_devices=False).trace_step().graph


def _in_allreduce(op):
    return "allreduce/" in op.name


@pytest.mark.parametrize("spec,use_bf16", [("nccl", False), ("pscpu", False),
                                           ("psgpu", False), ("ring", False),
                                           ("pscpu", True), ("ring", True)])
def test_gpu_step_moves_half_and_hands_float32_to_the_optimizer(spec, use_bf16):
    half = tf.bfloat16 if use_bf16 else tf.float16
    ops = all_operations(_gpu_graph(spec, use_bf16))
    crossing = []  # (tensor, consumer) where the data changes device
    handed_back = []  # all-reduce results consumed outside it (the optimizer)
    for op in ops:
        # The step's scalars travel in float32, in a pack of their own.
        if "extra_values" in op.name:
            continue
        for tensor in op.inputs:
            producer = tensor.op
            if _in_allreduce(op) and producer.device and op.device and (
                    producer.device.lower() != op.device.lower()):
                crossing.append((tensor, op))
            if _in_allreduce(producer) and not _in_allreduce(op):
                handed_back.append(tensor)
    if spec == "nccl":  # NCCL moves the data inside its op
        crossing = [(t, op) for op in ops if op.type == "NcclAllReduce"
                    and "extra_values" not in op.name for t in op.inputs]
        assert len(crossing) == 4
    else:
        assert len(crossing) >= 6, "nothing crosses devices?"
    assert {tensor.dtype for tensor, _ in crossing} == {half}, [
        (t.name, t.dtype.name, op.name) for t, op in crossing if t.dtype != half]
    # Floating results are float32; each device's verdict on its sums is a boolean.
    assert handed_back and {t.dtype for t in handed_back} == {tf.float32, tf.bool}
    devices = {t.op.device.lower()[-5:] for t in handed_back}
    assert devices == {f"gpu:{i}" for i in range(4)}


# --- Training: compact against float32, on logical CPUs ------------------------

STEPS = 3
IMAGE_SHAPE = (6, 6, 2)
NUM_CLASSES = 4
GLOBAL_BATCH = 12


def _train(num_devices, spec, compact, use_bf16=False):
    rng = np.random.default_rng(3)
    images = rng.standard_normal((STEPS * GLOBAL_BATCH,) + IMAGE_SHAPE).astype(np.float32)
    labels = rng.integers(0, NUM_CLASSES, STEPS * GLOBAL_BATCH).astype(np.int32)
    params = Params(device="cpu", num_gpus=num_devices,
                    variable_update="replicated", all_reduce_spec=spec,
                    optimizer="momentum", init_learning_rate=0.1,
                    compact_gradient_transfer=compact, use_bf16=use_bf16,
                    allow_emulated_precision=True)
    keras.utils.set_random_seed(1)
    previous = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy("mixed_bfloat16" if use_bf16 else "float32")
    try:
        model = keras.Sequential([
            keras.Input(IMAGE_SHAPE),
            keras.layers.Conv2D(3, 3, activation="relu", name="conv"),
            keras.layers.Flatten(name="flatten"),
            keras.layers.Dense(NUM_CLASSES, name="logits"),
        ])
    finally:
        keras.mixed_precision.set_dtype_policy(previous)
    initial = model.get_weights()
    trainer = Trainer(params, model=model,
                      input_source=from_arrays(images, labels, GLOBAL_BATCH))
    results = [trainer.step() for _ in range(STEPS)]
    assert all(result.finite for result in results)
    copies = [[v.numpy() for v in copy] for copy in trainer.variables.trainable_copies()]
    return initial, copies, results[0].loss



# Ring on 4 devices trains through the same code as on 3 (whose chunks are
# uneven), and test_compact_sum_is_half_rounded_float32_and_identical checks
# its 4-device sum directly: it trains only with TOWERTRAIN_FULL_SWEEP=1.
@pytest.mark.parametrize("spec,num_devices,use_bf16", [
    ("pscpu", 2, False), ("ring", 3, False),
    pytest.param("ring", 4, False, marks=full_sweep_only(
        "same code as ring on 3")),
    ("pscpu", 4, True)])
def test_compact_training_tracks_float32_and_keeps_copies_identical(spec, num_devices,
                                                                    use_bf16):
    initial, full, full_loss = _train(num_devices, spec, compact=False, use_bf16=use_bf16)
    _, compact, compact_loss = _train(num_devices, spec, compact=True, use_bf16=use_bf16)
    # The step's loss travels in float32 beside the half-precision packs: the
    # first step's (before any update) is the same bits.
    assert compact_loss == full_loss
    assert len(compact) == num_devices
    for copy in compact[1:]:
        for a, b in zip(copy, compact[0]):
            np.testing.assert_array_equal(a, b)  # bit-identical copies
    rtol = 4 * (EPS["bfloat16"] if use_bf16 else EPS["float16"])
    rounded = False
    for w0, f, c in zip(initial, full[0], compact[0]):
        # The update (not the weight) is what the rounding touches.
        step_f, step_c = f - w0, c - w0
        error = np.abs(step_c - step_f).max()
        assert error <= rtol * np.abs(step_f).max(), (error, np.abs(step_f).max())
        rounded |= not np.array_equal(f, c)
    assert rounded, "compact transfer changed nothing: was it applied?"


def test_a_loss_beyond_float16_s_range_is_carried_in_float32_and_the_step_applies():
    """The step's loss rides the exchange to each device's finite check in a
    float32 pack of its own: a float16 transfer would make a loss of 1e5 (finite,
    its gradients small) infinite and skip every update."""
    def offset_loss(labels, logits):
        return keras.losses.sparse_categorical_crossentropy(
            labels, logits, from_logits=True) + 1e5
    rng = np.random.default_rng(0)
    images = rng.standard_normal((GLOBAL_BATCH,) + IMAGE_SHAPE).astype(np.float32)
    labels = rng.integers(0, NUM_CLASSES, GLOBAL_BATCH).astype(np.int32)
    model = keras.Sequential([keras.Input(IMAGE_SHAPE), keras.layers.Flatten(),
                              keras.layers.Dense(NUM_CLASSES)])
    trainer = Trainer(Params(device="cpu", num_gpus=2, variable_update="replicated",
                             init_learning_rate=0.1, compact_gradient_transfer=True),
                      model=model, input_source=from_arrays(images, labels, GLOBAL_BATCH),
                      loss_fn=offset_loss)
    result = trainer.step()
    assert result.finite and 1e5 < result.loss < 1e5 + 10
    trainer.close()
