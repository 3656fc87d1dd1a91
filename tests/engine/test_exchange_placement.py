"""Where each op of a pack's sum runs, op by op on the traced graph, for every
algorithm: the local ones of --variable_update=replicated (each registered
all-reduce) and every --all_reduce_spec of collective_all_reduce for a worker
of 2 (CPU and GPU device strings; tracing needs no GPU). For each:
- slices (StridedSlice, Slice, Split, ...) run on the device of the tensor
  they cut, so only the piece travels;
- sums run where the algorithm says (a central sum on its one device, a
  shard's on its own device, a collective on each member);
- copies: every tensor that crosses from one device to another is at most
  the algorithm's claim (the pack for a central sum, a chunk for the ring, a
  shard for the reduce-scatter, nothing for NCCL and flat collectives);
- every op has a device, and device i gets its sum.
"""
import numpy as np
import pytest
import tensorflow as tf

from towertrain.engine import exchange_settings as exchange_checks
from towertrain.config.cluster_spec import Cluster
from towertrain.engine.exchange import base, cross_worker
from towertrain.engine.process import devices as devices_lib
from towertrain.plan.sections import Exchange

LENGTH = 10  # one pack of 10 values: shards of 4, 3, 3 on 3 devices
SLICES = ("StridedSlice", "Slice", "Split", "SplitV", "Unpack")
SUMS = ("AddN", "AddV2", "NcclAllReduce", "CollectiveReduceV2",
        "CollectiveReduceScatterV2")
GPUS = [f"/gpu:{i}" for i in range(3)]
CPUS = [f"/cpu:{i}" for i in range(3)]
SHARD = -(-LENGTH // 3)


def _where(device):
    spec = tf.DeviceSpec.from_string(device)
    return f"{spec.device_type}:{spec.device_index}"


def _trace(sum_flats, devices):
    """The graph of sum_flats over one pack per device, and its outputs."""
    signature = [tf.TensorSpec([LENGTH], tf.float32, name=f"g{d}") for d in range(len(devices))]

    @tf.function(input_signature=signature)
    def summed(*given):
        flats = []
        for device, flat in zip(devices, given):
            with tf.device(device):
                flats.append(tf.identity(flat))
        return sum_flats(flats)
    function = summed.get_concrete_function()
    # The function's own output identities carry no device: their inputs' do.
    returned = [t.op for t in function.outputs]
    return function.graph, [op.inputs[0] if not op.device else op.outputs[0]
                            for op in returned], {op.name for op in returned}


def _local_sum(name, devices):
    algorithm = base.create(name)
    return lambda flats: algorithm.sum_flats(flats, devices)


def _cluster_sum(spec, devices):
    """collective_all_reduce's sum of a pack, worker 0 of 2 (traced only)."""
    exchange = cross_worker.ClusterExchange(
        Exchange(variable_update="collective_all_reduce", all_reduce_spec=spec,
                 collective_implementation="nccl" if devices is GPUS else "ring"),
        devices, Cluster(("127.0.0.1:1", "127.0.0.1:2"), 0), timeout=0)
    exchange.create([tf.Variable(np.zeros(LENGTH, np.float32))])
    local = exchange.local

    def sum_flats(flats):
        if local == "scatter":
            return exchange._scattered_sum(flats, key=1)
        if local:
            return exchange._hierarchical_sum(flats, key=1)
        return exchange._all_devices_sum(flats, key=1)
    return sum_flats


# name: (devices, the sum of one pack, {sum op: devices it may run on},
# the most elements one tensor may carry from one device to another).
CASES = {
    "pscpu": (GPUS, lambda: _local_sum("pscpu", GPUS), {"AddN": {"CPU:0"}}, LENGTH),
    "psgpu": (GPUS, lambda: _local_sum("psgpu", GPUS), {"AddN": {"GPU:0"}}, LENGTH),
    "nccl": (GPUS, lambda: _local_sum("nccl", GPUS),
             {"NcclAllReduce": {"GPU:0", "GPU:1", "GPU:2"}}, 0),
    "ring": (GPUS, lambda: _local_sum("ring", GPUS),
             {"AddV2": {"GPU:0", "GPU:1", "GPU:2"}}, SHARD),
    "collective, cpu": (CPUS, lambda: _cluster_sum("collective", CPUS),
                        {"CollectiveReduceV2": {"CPU:0", "CPU:1", "CPU:2"}}, 0),
    "pscpu/xring, cpu": (CPUS, lambda: _cluster_sum("pscpu/xring", CPUS),
                         {"AddN": {"CPU:0"}, "CollectiveReduceV2": {"CPU:0"}}, LENGTH),
    "scatter/xring, cpu": (CPUS, lambda: _cluster_sum("scatter/xring", CPUS),
                           {"AddN": {"CPU:0", "CPU:1", "CPU:2"},
                            "CollectiveReduceV2": {"CPU:0", "CPU:1", "CPU:2"}}, SHARD),
    "collective, gpu": (GPUS, lambda: _cluster_sum("collective", GPUS),
                        {"CollectiveReduceV2": {"GPU:0", "GPU:1", "GPU:2"}}, 0),
    "nccl/xring, gpu": (GPUS, lambda: _cluster_sum("nccl/xring", GPUS),
                        {"NcclAllReduce": {"GPU:0", "GPU:1", "GPU:2"},
                         "CollectiveReduceV2": {"GPU:0"}}, LENGTH),
    "psgpu/xring, gpu": (GPUS, lambda: _cluster_sum("psgpu/xring", GPUS),
                         {"AddN": {"GPU:0"}, "CollectiveReduceV2": {"GPU:0"}}, LENGTH),
    "scatter/xring, gpu": (GPUS, lambda: _cluster_sum("scatter/xring", GPUS),
                           {"CollectiveReduceScatterV2": {"GPU:0", "GPU:1", "GPU:2"},
                            "CollectiveReduceV2": {"GPU:0", "GPU:1", "GPU:2"}}, 0),
}


def test_every_algorithm_has_a_case():
    local = {name for name in CASES if "," not in name}
    assert local == set(base.registered_names()) == set(exchange_checks.REPLICATED_SPECS)
    assert {name.split(",")[0] for name in CASES if "," in name} == set(
        exchange_checks.COLLECTIVE_SPECS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_op_of_a_pack_sum_runs_where_the_algorithm_says(name):
    devices_lib.ensure_logical_cpus(4)
    devices, make, sums, most_crossing = CASES[name]
    graph, outputs, returned = _trace(make(), devices)
    ops = [op for op in graph.get_operations()
           if op.type != "Placeholder" and op.name not in returned]
    assert [op.name for op in ops if not op.device and op.inputs] == []
    placed = {op.name: _where(op.device) for op in ops if op.device}
    found = {}
    for op in ops:
        where = placed.get(op.name)
        if op.type in SLICES:  # cut where the tensor is: only the piece travels
            assert where == placed[op.inputs[0].op.name], (op.name, where)
        if op.type in SUMS:
            found.setdefault(op.type, set()).add(where)
        for tensor in op.inputs:  # copies: what crosses devices
            source = placed.get(tensor.op.name)
            if source and where and source != where and tensor.dtype != tf.resource:
                assert tensor.shape.num_elements() <= most_crossing, (
                    f"{tensor.name} ({tensor.shape}) crosses {source} -> {where}")
    assert found == sums
    assert [_where(t.op.device) for t in outputs] == [_where(d) for d in devices]
