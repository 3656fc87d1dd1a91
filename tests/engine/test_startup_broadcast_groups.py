"""The start-up broadcast (every copy takes worker 0's values) runs in the
step's own collective groups, traced for 2 workers x 4 absent GPUs: it opens
no group the step does not use. An all-device NCCL group built only for it
would cost every GPU a communicator (about 1.6 GB each) that a hierarchical
step (*/xring, scatter/xring) never uses. The NCCL communicators per GPU are
those docs/exchange.md counts."""
import collections

import pytest
import tensorflow as tf

import helpers.tiny_models  # noqa: F401 - registers ckpt_tiny (conv + batch norm)
from helpers.gpu_graph import NUM_GPUS, cluster_step
from towertrain.engine.exchange import graph_facts as collective_graph

# NCCL communicators per GPU index of the step and the broadcast together:
# docs/exchange.md's "Communicator memory".
COMMUNICATORS = {
    "collective": [1, 1, 1, 1],  # the all-device group
    "scatter/xring": [2, 2, 2, 2],  # the worker's GPUs' group, the shard's across workers
    "nccl/xring": [2, 1, 1, 1],  # NcclAllReduce's clique; GPU 0 crosses workers too
    "psgpu/xring": [1, 0, 0, 0],  # GPU 0 crosses workers; the local sum is an add_n
    "pscpu/xring": [0, 0, 0, 0],  # /cpu:0 crosses workers, by ring
}


def _gpu(op):
    spec = tf.DeviceSpec.from_string(op.device)
    return spec.device_index if (spec.device_type or "").upper() == "GPU" else None


def _groups(graph):
    """{(device, group size, group key)} of a graph's collectives; an
    NcclAllReduce, which has no group key, by its device count."""
    found = set()
    for _, op in collective_graph.collectives(graph):
        if op.type == "NcclAllReduce":
            found.add((op.device, op.get_attr("num_devices"), "NcclAllReduce"))
        else:
            found.add((op.device, *collective_graph.group(op)))
    return found


def _communicators(*graphs):
    """[count per GPU index] of the distinct NCCL communicators of graphs."""
    found = collections.defaultdict(set)
    for graph in graphs:
        for _, op in collective_graph.collectives(graph):
            gpu = _gpu(op)
            if gpu is None:
                continue
            if op.type == "NcclAllReduce":
                found[gpu].add(("NcclAllReduce", op.get_attr("num_devices")))
            elif op.get_attr("communication_hint") == b"nccl":
                found[gpu].add(collective_graph.group(op))
    return [len(found[i]) for i in range(NUM_GPUS)]


@pytest.mark.parametrize("spec", sorted(COMMUNICATORS))
def test_the_start_up_broadcast_uses_only_the_step_s_groups(spec):
    trainer, step = cluster_step(2, model="ckpt_tiny", all_reduce_spec=spec, data_format="NHWC")
    manager = trainer.variables
    copies = [t + n for t, n in zip(manager._trainable, manager._non_trainable)]
    broadcast = manager.collectives.build_broadcast(copies).get_concrete_function().graph
    sent, used = _groups(broadcast), _groups(step)
    assert sent and sent <= used, sorted(sent - used)
    # Every group it uses is one the opener opens before it, in one order.
    opened = {key for key, _, _ in manager.collectives.groups()}
    assert {group[-1] for group in sent if group[-1] != "NcclAllReduce"} <= opened
    assert _communicators(step, broadcast) == COMMUNICATORS[spec]


def test_the_groups_are_opened_before_the_broadcast_uses_them(monkeypatch):
    """The broadcast's NCCL groups are made by the opener, in its one order:
    a group first made by the broadcast, where several GPUs' collectives
    start at once, could be made in different orders on two workers."""
    from towertrain.engine.exchange import cross_worker
    calls = []
    monkeypatch.setattr(cross_worker.ClusterExchange, "build_opener",
                        lambda self: lambda: calls.append("open"))
    monkeypatch.setattr(cross_worker.ClusterExchange, "build_broadcast",
                        lambda self, copies: lambda: calls.append(("broadcast", copies)))
    cross_worker.ClusterExchange.start(object.__new__(cross_worker.ClusterExchange), "copies")
    assert calls == ["open", ("broadcast", "copies")]
