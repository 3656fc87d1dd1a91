"""All-reduce algorithms: exact sums, identical on every device, placed on it."""
import numpy as np
import pytest
import tensorflow as tf

from towertrain.engine import exchange
from towertrain.engine.exchange.packing import pack, unpack
from towertrain.engine.variable_mgr.parameter_server import spread_greedy

SHAPES = [(3, 4), (5,), (), (2, 1, 3), (7,)]


def _inputs(num_devices, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(shape).astype(np.float32) for shape in SHAPES]
            for _ in range(num_devices)]


@pytest.mark.parametrize("name", ["pscpu", "ring"])
@pytest.mark.parametrize("num_devices", [1, 2, 3, 4])
def test_sum_is_exact_and_identical_across_devices(name, num_devices):
    devices = [f"/cpu:{i}" for i in range(num_devices)]
    values = _inputs(num_devices)
    algorithm = exchange.local_algorithm(name)

    @tf.function
    def run():
        per_device = []
        for device, grads in zip(devices, values):
            with tf.device(device):
                per_device.append([tf.constant(g) for g in grads])
        return algorithm.reduce(per_device, devices)

    result = [[t.numpy() for t in grads] for grads in run()]
    expected = [np.sum([values[d][v] for d in range(num_devices)], axis=0)
                for v in range(len(SHAPES))]
    for d in range(num_devices):
        for v in range(len(SHAPES)):
            assert result[d][v].shape == SHAPES[v]
            np.testing.assert_allclose(result[d][v], expected[v], rtol=1e-6, atol=1e-6)
            np.testing.assert_array_equal(result[d][v], result[0][v])


def test_ring_places_each_hop_on_the_ring_devices():
    devices = [f"/cpu:{i}" for i in range(3)]
    algorithm = exchange.local_algorithm("ring")

    @tf.function
    def run():
        per_device = []
        for device, grads in zip(devices, _inputs(3)):
            with tf.device(device):
                per_device.append([tf.constant(g) for g in grads])
        return algorithm.reduce(per_device, devices)

    graph = run.get_concrete_function().graph
    adds = [op for op in graph.get_operations() if op.type in ("AddV2", "Add")]
    # Reduce-scatter: (n - 1) hops for each of n chunks, spread over all devices.
    assert len(adds) == 3 * 2
    assert {op.device.lower()[-5:] for op in adds} == {"cpu:0", "cpu:1", "cpu:2"}


def test_pack_roundtrip_and_mixed_dtypes_refused():
    tensors = [tf.reshape(tf.range(6.0), (2, 3)), tf.constant(1.0), tf.ones((4,))]
    flat, spec = pack(tensors)
    assert flat.shape == (11,)
    for original, restored in zip(tensors, unpack(flat, spec)):
        np.testing.assert_array_equal(original.numpy(), restored.numpy())
    with pytest.raises(ValueError, match="mixed dtypes"):
        pack([tf.ones(2), tf.ones(2, tf.float16)])


def test_unknown_algorithm_lists_known_ones():
    with pytest.raises(ValueError, match="known: nccl, pscpu, psgpu, ring"):
        exchange.local_algorithm("xring")


def test_spread_greedy_puts_largest_first_onto_least_loaded():
    # sizes 100, 60, 50, 10 over 2 devices: 100->d0, 60->d1, 50->d1, 10->d0... or d1
    placement = spread_greedy([10, 100, 50, 60], ["/gpu:0", "/gpu:1"])
    assert placement == [0, 0, 1, 1]
    loads = [sum(s for s, p in zip([10, 100, 50, 60], placement) if p == d) for d in (0, 1)]
    assert loads == [110, 110]
