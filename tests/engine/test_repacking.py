"""--gradient_repacking=N and --gradient_pack_mb=M: N packs, or packs of at
most M MB, train exactly like one pack.

Through towertrain.Trainer on 4 logical CPU devices, a conv + dense model,
3 steps of an uneven epoch (10, 10, then 3 examples: the last
step leaves one tower empty), for every algorithm that runs on CPU, with
--compact_gradient_transfer, and with collective_all_reduce's flat and
hierarchical exchange. The plan itself is checked against numpy.

Cost (a Trainer trace each): the float32 replicated algorithms share one
one-pack reference (pscpu's: ring's one pack is the same sum, reordered, well
inside 1e-5), and compact transfer runs with ring in the default suite (its
chunks are where packing and half precision interact); pscpu with compact
transfer repeats both halves of that code and runs with TOWERTRAIN_FULL_SWEEP=1.
"""

import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.engine.exchange import packing
from towertrain.input_pipeline import from_arrays

from helpers.serial_reference import IMAGE_SHAPE, NUM_CLASSES, tiny_model
from helpers.sweep import full_sweep_only

NUM_EXAMPLES, GLOBAL_BATCH = 23, 10


def _train(mode, spec, packs, compact=False, pack_mb=None):
    """(losses, every copy's weights, initial weights) after one epoch."""
    rng = np.random.default_rng(3)
    images = rng.standard_normal((NUM_EXAMPLES,) + IMAGE_SHAPE).astype(np.float32)
    labels = rng.integers(0, NUM_CLASSES, NUM_EXAMPLES).astype(np.int32)
    tf.keras.utils.set_random_seed(1)
    model = tiny_model()
    initial = model.get_weights()
    params = Params(device="cpu", num_gpus=4, variable_update=mode,
                    all_reduce_spec=spec, gradient_repacking=packs,
                    gradient_pack_mb=pack_mb,
                    compact_gradient_transfer=compact, optimizer="momentum",
                    init_learning_rate=0.1, num_epochs=1, num_warmup_batches=0)
    trainer = Trainer(params, model=model, input_source=from_arrays(
        images, labels, GLOBAL_BATCH, num_epochs=1))
    assert trainer.total_steps == 3
    losses = [float(trainer.step()) for _ in range(trainer.total_steps)]
    copies = [[v.numpy() for v in copy] for copy in trainer.variables.trainable_copies()]
    return losses, copies, initial



@pytest.mark.parametrize("mode,spec,compact,other_spec", [
    ("replicated", "pscpu", False, None), ("replicated", "ring", False, None),
    pytest.param("replicated", "pscpu", True, None, marks=full_sweep_only(
        "pscpu runs above and compact with ring")),
    ("replicated", "ring", True, None),
    # One process: the flat exchange with one pack is the reference for both.
    ("collective_all_reduce", "collective", False, None),
    ("collective_all_reduce", "collective", False, "pscpu/xring"),
    # 4 devices: packs of 37 values leave shards of 10, 9, 9, 9.
    ("collective_all_reduce", "collective", False, "scatter/xring")])
def test_packs_equal_one_pack(mode, spec, compact, other_spec):
    one_losses, one, initial = _reference(mode, spec, compact)
    # 7 packs of 36-37 of the 253 values: both kernels straddle packs.
    losses, many, _ = _train(mode, other_spec or spec, 7, compact)
    # float16 transfer: the ring's chunks fall elsewhere in a pack, so sums round
    # differently; float32: at most reordered float32 additions.
    tol = dict(rtol=1e-2, atol=5e-3) if compact else dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(losses, one_losses, **tol)
    assert any(not np.allclose(a, b) for a, b in zip(one[0], initial)), "nothing trained"
    for v, expected in enumerate(one[0]):
        np.testing.assert_allclose(many[0][v], expected, err_msg=f"variable {v}", **tol)
    for copy in many[1:]:  # every device's copy bit-identical
        for mine, first in zip(copy, many[0]):
            np.testing.assert_array_equal(mine, first)


@pytest.mark.parametrize("mode,spec", [
    ("replicated", "pscpu"), ("collective_all_reduce", "collective"),
    ("collective_all_reduce", "pscpu/xring"), ("collective_all_reduce", "scatter/xring")])
def test_packs_sized_in_bytes_equal_one_pack(mode, spec):
    """Packs of at most 200 B: the 1012 B of the 253 float32 values in 6
    packs of 168-172 B (both kernels straddle packs), over the uneven epoch."""
    one_losses, one, _ = _reference(mode, "collective" if mode != "replicated" else spec,
                                    False)
    losses, sized, _ = _train(mode, spec, 0, pack_mb=0.0002)
    np.testing.assert_allclose(losses, one_losses, rtol=1e-5, atol=1e-6)
    for v, expected in enumerate(one[0]):
        np.testing.assert_allclose(sized[0][v], expected, err_msg=f"variable {v}",
                                   rtol=1e-5, atol=1e-6)
    for copy in sized[1:]:
        for mine, first in zip(copy, sized[0]):
            np.testing.assert_array_equal(mine, first)


_REFERENCES = {}


def _reference(mode, spec, compact):
    if mode == "replicated" and not compact:
        spec = "pscpu"  # one float32 sum, whichever replicated algorithm
    key = (mode, spec, compact)
    if key not in _REFERENCES:
        _REFERENCES[key] = _train(mode, spec, 0, compact)
    return _REFERENCES[key]


SHAPES = [(3, 3, 3, 4), (4,), (4, 10), (10,), (), (2, 0)]


@pytest.mark.parametrize("num_packs", [1, 2, 3, 5, 7, 200])
def test_plan_cuts_reverse_order_into_equal_packs_and_round_trips(num_packs):
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    values.insert(2, np.ones(3, np.float16))  # a second dtype: packed on its own
    tensors = [tf.constant(v) for v in values]
    packs = packing.plan(tensors, num_packs)
    float32 = [p for p in packs if p.dtype == tf.float32]
    total = sum(v.size for v in values if v.dtype == np.float32)
    sizes = [packing.pack_size(p) for p in float32]
    assert len(float32) == min(num_packs, total) and sum(sizes) == total
    assert max(sizes) - min(sizes) <= 1  # about equal bytes
    # Reverse layer order: walking the packs reads the reversed concatenation.
    walked = np.concatenate([packing.gather(tensors, p).numpy() for p in float32])
    expected = np.concatenate([v.ravel() for v in reversed(values) if v.dtype == np.float32])
    np.testing.assert_array_equal(walked, expected)
    restored = packing.scatter([packing.gather(tensors, p) for p in packs], packs, tensors)
    for original, back in zip(values, restored):
        assert back.dtype == original.dtype
        np.testing.assert_array_equal(back.numpy(), original)


def test_zero_packs_is_one_pack_per_dtype_in_variable_order():
    tensors = [tf.ones((2, 3)), tf.ones(4, tf.float16), tf.ones(5)]
    packs = packing.plan(tensors, 0)
    assert [(p.dtype, p.pieces) for p in packs] == [
        (tf.float16, ((1, 0, 4),)), (tf.float32, ((0, 0, 6), (2, 0, 5)))]
    assert packing.describe(tensors, 0) == "2 packs (one per dtype): float16 8 B; float32 44 B"
    assert packing.describe(tensors, 4) == ("8 packs (per dtype, reverse layer order): "
                                            "float16 2 B, 2 B, 2 B, 2 B; "
                                            "float32 8 B, 12 B, 12 B, 12 B")


@pytest.mark.parametrize("pack_bytes,expected_count", [
    (200, 4), (100, 7), (4000, 1), (652, 1), (651, 2), (4, 163), (1, 163)])
def test_packs_sized_in_bytes_are_the_fewest_that_fit(pack_bytes, expected_count):
    """ceil(bytes / size) packs per dtype (never more than its elements),
    about equal, none over the size, in reverse layer order."""
    rng = np.random.default_rng(1)
    values = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    values.insert(2, np.ones(3, np.float16))  # 6 B, cut on its own
    tensors = [tf.constant(v) for v in values]
    packs = packing.plan(tensors, 0, pack_bytes)
    float32 = [p for p in packs if p.dtype == tf.float32]
    sizes = [packing.pack_size(p) * 4 for p in float32]
    assert sum(sizes) == 4 * sum(v.size for v in values if v.dtype == np.float32) == 652
    assert len(float32) == expected_count
    assert max(sizes) <= max(pack_bytes, 4) and max(sizes) - min(sizes) <= 4
    assert len([p for p in packs if p.dtype == tf.float16]) == min(3, -(-6 // pack_bytes))
    walked = np.concatenate([packing.gather(tensors, p).numpy() for p in float32])
    expected = np.concatenate([v.ravel() for v in reversed(values) if v.dtype == np.float32])
    np.testing.assert_array_equal(walked, expected)
    restored = packing.scatter([packing.gather(tensors, p) for p in packs], packs, tensors)
    for original, back in zip(values, restored):
        np.testing.assert_array_equal(back.numpy(), original)


def test_packs_sized_in_bytes_stop_at_the_pack_limit():
    """The collective exchange numbers its instance keys by pack: at most
    MAX_PACKS per dtype, however small the size."""
    packs = packing.plan([tf.zeros(5000)], 0, 1)
    assert len(packs) == packing.MAX_PACKS == 1000
    assert {packing.pack_size(p) for p in packs} == {5}


def test_describe_names_the_pack_size():
    tensors = [tf.ones((2, 3)), tf.ones(4, tf.float16), tf.ones(5)]
    assert packing.describe(tensors, 0, 20) == ("4 packs (of at most 20 B, reverse layer "
                                                "order): float16 8 B; float32 12 B, 16 B, 16 B")


def test_scatter_shards_a_pack_not_divisible_by_the_devices():
    """scatter/xring on 3 CPU devices, a pack of 7 values: local device i
    holds the local sum of its shard (3, 2, 2 values: the first 7 % 3 one
    longer), computed on device i; after the gather every device holds the
    whole sum. Independent computation: numpy over the same inputs."""
    from towertrain.config.cluster_spec import SINGLE
    from towertrain.engine.exchange import cross_worker
    from towertrain.engine.process import devices as devices_lib
    from towertrain.plan.sections import Exchange
    assert cross_worker.shard_sizes(7, 3) == [3, 2, 2]
    assert cross_worker.shard_sizes(2, 3) == [1, 1, 0]
    assert cross_worker.shard_sizes(8, 2) == [4, 4]
    devices_lib.ensure_logical_cpus(4)
    devices = ["/cpu:0", "/cpu:1", "/cpu:2"]
    manager = cross_worker.ClusterExchange(
        Exchange(variable_update="collective_all_reduce", all_reduce_spec="scatter/xring"),
        devices, SINGLE, timeout=0)
    values = np.arange(21, dtype=np.float32).reshape(3, 7) ** 1.5

    @tf.function
    def sums():
        flats = []
        for device, row in zip(devices, values):
            with tf.device(device):
                flats.append(tf.constant(row))
        shards = manager._add_n_reduce_scatter(flats)
        return shards, manager._scattered_sum(flats, key=0)
    graph = sums.get_concrete_function().graph

    def placed(op_type):
        return [tf.DeviceSpec.from_string(op.device).device_index
                for op in graph.get_operations() if op.type == op_type]
    assert placed("AddN")[:3] == [0, 1, 2]  # shard i summed on device i
    assert placed("ConcatV2")[-3:] == [0, 1, 2]  # the whole sum gathered on each
    shards, whole = sums()
    total = values.sum(axis=0)
    for shard, (start, end) in zip(shards, [(0, 3), (3, 5), (5, 7)]):
        np.testing.assert_allclose(shard.numpy(), total[start:end], rtol=1e-6)
    for tensor in whole:
        np.testing.assert_allclose(tensor.numpy(), total, rtol=1e-6)


def test_describe_names_the_dtype_on_the_wire():
    """A half-precision transfer sends float16 (or bfloat16): the line names
    and sizes what crosses, not the float32 gradients it is cut from."""
    tensors = [tf.ones((2, 3)), tf.ones(4, tf.float16), tf.ones(5)]
    assert packing.describe(tensors, 0, wire_dtype="float16") == (
        "2 packs (one per dtype): float16 8 B; float16 22 B (cast from float32)")
    assert packing.describe(tensors, 0, 20, wire_dtype="bfloat16") == (
        "4 packs (of at most 20 B before the cast, reverse layer order): bfloat16 8 B "
        "(cast from float16); bfloat16 6 B, 8 B, 8 B (cast from float32)")
