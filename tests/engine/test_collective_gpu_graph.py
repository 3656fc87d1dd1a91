"""The GPU cluster path of --variable_update=collective_all_reduce, proven on
the step traced for 2 workers x 4 absent GPUs (worker 0's graph; every worker
builds the same step).

- No collective member is pruned: every NcclAllReduce and collective op is
  reached from its function's outputs or control outputs. An unused
  NcclAllReduce (an async stateful op) is not a control output, so
  TensorFlow drops it and its peers wait forever; NCCL has no timeout.
- Each GPU has one ordering chain: its collectives are totally ordered by
  data and control edges, so every worker launches them in one order.
- The collectives that cross workers carry the --collective_implementation
  hint: nccl on GPUs by default, ring for the scalars on /cpu:0.
- scatter/xring (Horovod's shape) reduce-scatters and gathers each pack over
  this worker's GPUs with NCCL, and each GPU's shard crosses workers in a
  group of its own (one per local index, the same on every worker).
"""
import collections
import os
import subprocess
import sys

import pytest
import tensorflow as tf

import helpers.tiny_models  # noqa: F401 - registers ckpt_tiny (conv + batch norm)
from helpers.gpu_graph import NUM_GPUS, cluster_step
from towertrain.engine.exchange import graph_facts as collective_graph

GPU_SPECS = ("nccl/xring", "psgpu/xring", "collective", "pscpu/xring", "scatter/xring")


def _step_graph(spec, workers=2, **overrides):
    return cluster_step(workers, model="ckpt_tiny", all_reduce_spec=spec, gradient_repacking=4,
                        data_format="NHWC", **overrides)[1]


@pytest.mark.parametrize("workers", [2, 1])
@pytest.mark.parametrize("spec", GPU_SPECS)
def test_no_collective_member_is_left_to_be_pruned(spec, workers):
    graph = _step_graph(spec, workers)
    found = collective_graph.collectives(graph)
    types = collections.Counter(op.type for _, op in found)
    if spec == "nccl/xring":  # one NCCL launch per pack per GPU
        assert types["NcclAllReduce"] == 4 * NUM_GPUS, types
    if spec == "scatter/xring":  # a reduce-scatter and a gather per pack per GPU
        assert types["CollectiveReduceScatterV2"] == types["CollectiveGatherV2"] == 4 * NUM_GPUS
        crossing = [op for _, op in found if op.type == "CollectiveReduceV2"
                    and "/pack" in op.name]
        assert len(crossing) == (4 * NUM_GPUS if workers == 2 else 0)
    if workers == 2:
        assert types["CollectiveReduceV2"] >= 4, types  # a cross-worker sum per pack at least
    pruned = collective_graph.pruned(graph)
    assert not pruned, f"{spec}: {len(pruned)} of {len(found)} collectives pruned: {pruned}"


@pytest.mark.parametrize("spec", GPU_SPECS)
def test_each_gpu_has_one_ordering_chain(spec):
    graph = _step_graph(spec)
    # psgpu/xring crosses from GPU 0 alone; pscpu/xring from /cpu:0.
    gpus = {"psgpu/xring": {0}, "pscpu/xring": set()}.get(spec, set(range(NUM_GPUS)))
    assert collective_graph.gpus_with_collectives(graph) == gpus, spec
    assert collective_graph.unordered_on_gpus(graph) == [], spec


@pytest.mark.parametrize("spec", ["nccl/xring", "psgpu/xring", "collective", "scatter/xring"])
def test_cross_worker_collectives_use_nccl_on_gpus_by_default(spec):
    # No CPU collective: the step's scalars ride the last pack.
    assert collective_graph.hints(_step_graph(spec)) == {("GPU", "nccl")}


def test_ring_is_selectable_and_a_cpu_member_crosses_by_ring():
    assert collective_graph.hints(_step_graph("nccl/xring", collective_implementation="ring")) \
        == {("GPU", "ring")}
    # pscpu/xring's packs (the batch-norm statistics in the first) cross from /cpu:0.
    assert collective_graph.hints(_step_graph("pscpu/xring")) == {("CPU", "ring")}


def _pack_collectives(graph, op_type):
    """{pack index: [(GPU index, group size, group key)]} of the step's
    collectives of op_type in the gradient packs, in graph order."""
    found = {}
    for _, op in collective_graph.collectives(graph):
        if op.type == op_type and "/pack" in op.name:
            pack = int(op.name.split("/pack")[1].split("/")[0])
            found.setdefault(pack, []).append(
                (tf.DeviceSpec.from_string(op.device).device_index,
                 *collective_graph.group(op)))
    return found


@pytest.mark.parametrize("implementation", ["auto", "ring"])
def test_scatter_xring_crosses_from_every_gpu_in_a_group_per_local_index(implementation):
    graphs = [cluster_step(2, task, model="ckpt_tiny", all_reduce_spec="scatter/xring",
                           gradient_repacking=4, data_format="NHWC",
                           collective_implementation=implementation)[1] for task in (0, 1)]
    local_keys = []
    for graph in graphs:
        # Inside the worker: NCCL reduce-scatter and gather over its 4 GPUs,
        # whatever crosses workers (TensorFlow has no ring reduce-scatter).
        for op_type in ("CollectiveReduceScatterV2", "CollectiveGatherV2"):
            assert collective_graph.hints(graph, op_type) == {("GPU", "nccl")}
            members = _pack_collectives(graph, op_type)
            assert sorted(members) == [0, 1, 2, 3]
            for pack in members.values():
                assert sorted(gpu for gpu, _, _ in pack) == list(range(NUM_GPUS))
                assert {size for _, size, _ in pack} == {NUM_GPUS}
            local_keys.append({key for pack in members.values() for _, _, key in pack})
        # Across workers: per pack one all-reduce per GPU, group size 2, the
        # group key that of the GPU's local index.
        crossing = _pack_collectives(graph, "CollectiveReduceV2")
        assert sorted(crossing) == [0, 1, 2, 3]
        keys_by_gpu = {}
        for pack in crossing.values():
            assert sorted(gpu for gpu, _, _ in pack) == list(range(NUM_GPUS))
            assert {size for _, size, _ in pack} == {2}
            for gpu, _, key in pack:
                keys_by_gpu.setdefault(gpu, set()).add(key)
        assert all(len(keys) == 1 for keys in keys_by_gpu.values()), keys_by_gpu
        assert len({min(keys) for keys in keys_by_gpu.values()}) == NUM_GPUS
        expected_hint = "nccl" if implementation == "auto" else "ring"
        assert ("GPU", expected_hint) in collective_graph.hints(graph)
        if graph is graphs[0]:
            first_keys = keys_by_gpu
    assert keys_by_gpu == first_keys  # the same groups on both workers
    # One local group per worker for the reduce-scatter and the gather (one
    # NCCL communicator), another on each worker (group keys are global).
    assert all(len(keys) == 1 for keys in local_keys)
    assert local_keys[0] == local_keys[1] and local_keys[2] == local_keys[3]
    assert len(set.union(*local_keys)) == 2


def test_scatter_xring_first_byte_sized_pack_waits_for_no_conv_backward():
    """Packs of at most 200 B (ckpt_tiny's 680 B in 4): pack 0's cross-worker
    collectives wait (data or control edges) for no first-layer backward."""
    graph = cluster_step(2, model="ckpt_tiny", all_reduce_spec="scatter/xring",
                         gradient_pack_mb=0.0002, data_format="NHWC")[1]
    top = graph.get_operations()
    conv_backward = [op for op in top if op.type == "Conv2DBackpropFilter"]
    assert len(conv_backward) == NUM_GPUS

    def crossing(k):
        ops = [op for op in top if op.type == "CollectiveReduceV2" and f"/pack{k}/" in op.name]
        assert len(ops) == NUM_GPUS, k
        return [any(c in collective_graph.ancestors(op) for c in conv_backward) for op in ops]
    assert sorted(_pack_collectives(graph, "CollectiveReduceV2")) == [0, 1, 2, 3]
    assert not any(crossing(0))
    assert all(crossing(3))  # the last pack holds the conv kernel's gradient


def test_the_header_says_how_collectives_cross():
    from towertrain.plan import describe
    trainer = cluster_step(model="ckpt_tiny")[0]
    assert describe.static_lines(trainer.plan)["Collectives"] == (
        "nccl (NCCL between the workers' GPUs; the step's scalars ride the last pack)")
    trainer = cluster_step(model="ckpt_tiny", collective_implementation="ring")[0]
    assert describe.static_lines(trainer.plan)["Collectives"].startswith("ring (TensorFlow's")


@pytest.mark.parametrize("spec", ["nccl/xring", "collective", "scatter/xring"])
def test_the_step_tail_rides_the_last_pack(spec):
    """Multi-worker step of a batch-norm model: no collective besides the
    gradient packs. The loss, example count and stop requests ride the last
    pack, the batch-norm statistics the first; the towers wait for no
    collective (the count is folded into the tail); the update's branches
    hold none; and no collective on a CPU device is an ancestor of any
    variable update (each device decides from its own copy of the sums)."""
    graph = _step_graph(spec)
    found = collective_graph.collectives(graph)
    others = [(g, op) for g, op in found if "/pack" not in op.name]
    assert not others, [op.name for _, op in others]
    assert all(g is graph for g, _ in found), "a collective inside the update's branch"
    towers = [op for op in graph.get_operations() if op.name.startswith("tower_")]
    assert towers
    before = {op.name for _, op in found} & {op.name for op in collective_graph.ancestors(*towers)}
    assert not before, f"the towers wait for collectives {sorted(before)}"
    assert collective_graph.cpu_collectives_before_updates(graph) == []


def test_in_half_precision_the_count_goes_before_the_towers():
    """--use_fp16: a loss divided by the nominal batch would round otherwise
    in float16 (engine/step/train_step.py), so the count and stop requests
    are summed before the towers: one scalar collective besides the packs."""
    graph = _step_graph("nccl/xring", use_fp16=True)
    found = collective_graph.collectives(graph)
    others = [op for _, op in found if "/pack" not in op.name]
    towers = [op for op in graph.get_operations() if op.name.startswith("tower_")]
    ahead = collective_graph.ancestors(*towers)
    assert [op.inputs[0].shape.num_elements() for op in others] == [2]
    assert [op.inputs[0].shape.num_elements() for op in others if op in ahead] == [2]


# -- the CPU analog of the pruning, executed ---------------------------------

def _v1_all_sum(tensors, timeout):
    """NCCL's stand-in on logical CPUs: one V1 CollectiveReduce per device. Like
    NcclAllReduce it is an async stateful op (pruned when nothing reads it);
    unlike NCCL it has a timeout, so a lost member ends in DeadlineExceeded."""
    _v1_all_sum.instance += 1
    out = []
    for tensor in tensors:
        with tf.device(tensor.device):
            out.append(tf.raw_ops.CollectiveReduce(
                input=tensor, group_size=len(tensors), group_key=77,
                instance_key=_v1_all_sum.instance, merge_op="Add", final_op="Id",
                subdiv_offsets=[0], timeout_seconds=timeout))
    return out


_v1_all_sum.instance = 7000


def _hierarchical_sum_on_cpus(monkeypatch, timeout):
    """The exchange's own nccl/xring pack sum, on 2 logical CPUs of one worker,
    with the V1 collective standing in for NCCL."""
    from towertrain import private_api
    from towertrain.engine.process import devices as devices_lib
    from towertrain.config.cluster_spec import SINGLE
    from towertrain.engine.exchange import cross_worker
    from towertrain.plan.sections import Exchange
    devices_lib.ensure_logical_cpus(2)
    monkeypatch.setattr(private_api, "nccl_all_sum", lambda t: _v1_all_sum(t, timeout))
    manager = cross_worker.ClusterExchange(Exchange(
        variable_update="collective_all_reduce", all_reduce_spec="nccl/xring"),
        ["/cpu:0", "/cpu:1"], SINGLE, timeout=0)

    @tf.function
    def step():
        flats = []
        for i, device in enumerate(manager.devices):
            with tf.device(device):
                flats.append(tf.fill([3], float(i + 1)))
        return manager._hierarchical_sum(flats, key=0)
    return [t.numpy().tolist() for t in step()]


def test_cpu_analog_every_member_runs_and_the_sum_arrives(monkeypatch):
    # Before the fix only member 0's output was read: member 1 was pruned and
    # member 0 waited until DeadlineExceeded (mutation/mutation_list.py:
    # nccl_member_outputs_dropped).
    assert _hierarchical_sum_on_cpus(monkeypatch, timeout=20.0) == [[3.0] * 3, [3.0] * 3]


_PRUNED_MEMBER = """
import tensorflow as tf
from towertrain.engine.process import devices
devices.ensure_logical_cpus(2)

@tf.function
def step():
    out = []
    for i in range(2):
        with tf.device(f"/cpu:{i}"):
            out.append(tf.raw_ops.CollectiveReduce(
                input=tf.fill([3], float(i + 1)), group_size=2, group_key=77, instance_key=1,
                merge_op="Add", final_op="Id", subdiv_offsets=[0], timeout_seconds=2.0))
    return out[0]  # member 1's output unused: pruned
try:
    step()
except tf.errors.DeadlineExceededError:
    print("DeadlineExceeded")
"""


def test_cpu_analog_a_pruned_member_times_out():
    """The hazard itself, so the analog above proves something: the same
    stand-in with one member's output unused never completes. In a process
    of its own: a timed-out collective aborts the process's collective
    runtime for every later one."""
    done = subprocess.run([sys.executable, "-c", _PRUNED_MEMBER], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "DeadlineExceeded", done.stdout
