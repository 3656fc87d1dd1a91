"""What a traced collective_all_reduce step must hold on GPUs, read from its
graph: bench/gpu_proof.py checks it without a GPU, and the tests with it.

- pruned(): collectives that TensorFlow would drop because nothing reaches
  them from the function's outputs or control outputs. An NcclAllReduce (an
  async stateful op) whose output nothing reads is such an op; its peers
  then wait forever (NCCL has no timeout).
- unordered_on_gpus(): two collectives on one GPU with no path between
  them, so that workers may launch them in different orders.
- hints(): (device type, communication hint) of the collective all-reduces.
- cpu_collectives_before_updates(): collectives on a CPU device that some
  variable update waits for (a host round trip on a GPU update's path).
- group_order(): the groups of a graph's collectives in the order its
  control edges chain them.

Within stand_in_cluster(cluster) a Trainer of one worker of a multi-worker
run is built in this process without joining the cluster (no server, no
start-up broadcast, no peer watch: each would wait for peers that are not
there), for tracing its step.
"""
import contextlib

import tensorflow as tf

from towertrain.engine.distributed import cluster as cluster_lib, peer_watch
from towertrain.engine.exchange import cross_worker

COLLECTIVE_OPS = ("NcclAllReduce", "CollectiveReduceV2", "CollectiveReduce",
                  "CollectiveReduceScatterV2", "CollectiveGatherV2", "CollectiveBcastSendV2",
                  "CollectiveBcastRecvV2")


def _called_functions(op):
    """The functions `op` calls (cond branches, loop bodies, calls), looked up
    from its graph outwards (no public lookup of a nested FuncGraph)."""
    found = []
    for attr in op.node_def.attr:
        value = op.node_def.attr[attr]
        names = [value.func.name] if value.HasField("func") else []
        names += [f.name for f in value.list.func]
        for name in filter(None, names):
            g = op.graph
            while g is not None:
                fn = g._get_function(name)
                if fn is not None:
                    found.append((name, fn))
                    break
                g = getattr(g, "outer_graph", None)
    return found


def function_graphs(graph):
    """`graph` and every function graph nested in it (cond branches, loop
    bodies, called functions), each once."""
    found, seen = [], set()

    def visit(g):
        found.append(g)
        for op in g.get_operations():
            for name, fn in _called_functions(op):
                if name not in seen:
                    seen.add(name)
                    visit(fn.graph)
    visit(graph)
    return found


def kept_ops(graph):
    """The ops of a function graph that run: those its outputs and control
    outputs reach through data and control inputs. TensorFlow prunes the rest."""
    kept, stack = set(), [t.op for t in graph.outputs] + list(graph.control_outputs)
    while stack:
        op = stack.pop()
        if op not in kept:
            kept.add(op)
            stack.extend(t.op for t in op.inputs)
            stack.extend(op.control_inputs)
    return kept


def _called_graphs(op):
    """The function graphs `op` calls, nested ones included."""
    return [g for _, fn in _called_functions(op) for g in function_graphs(fn.graph)]


UPDATE_OP_TYPES = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp")


def is_update(op):
    """A write to a resource variable (an optimizer's fused apply, an assign)."""
    return op.type.startswith("ResourceApply") or op.type in UPDATE_OP_TYPES


def update_sites(graph):
    """The ops of `graph` that update a variable, or call a function graph
    (a cond branch) that does."""
    return [op for op in graph.get_operations()
            if is_update(op) or any(is_update(inner) for g in _called_graphs(op)
                                    for inner in g.get_operations())]


def cpu_collectives_before_updates(graph):
    """Names of the collectives on a CPU device that an update of `graph`
    (directly, or through the branch that holds it) waits for."""
    waited = ancestors(*update_sites(graph))
    return sorted(op.name for op in waited
                  if op.type in COLLECTIVE_OPS and _device(op)[0] == "CPU")


def ancestors(*ops):
    """Every op that any of `ops` waits for, through data and control inputs
    (one walk for all of them)."""
    found, stack = set(), list(ops)
    while stack:
        current = stack.pop()
        for parent in [t.op for t in current.inputs] + list(current.control_inputs):
            if parent not in found:
                found.add(parent)
                stack.append(parent)
    return found


def collectives(graph):
    """(function graph, op) of every collective and NCCL op of a step."""
    return [(g, op) for g in function_graphs(graph) for op in g.get_operations()
            if op.type in COLLECTIVE_OPS]


def pruned(graph):
    """Names of the collectives nothing keeps alive."""
    found = collectives(graph)
    kept = {g: kept_ops(g) for g in {g for g, _ in found}}
    return [op.name for g, op in found if op not in kept[g]]


def _device(op):
    spec = tf.DeviceSpec.from_string(op.device)
    return (spec.device_type or "").upper(), spec.device_index


def unordered_on_gpus(graph):
    """(GPU index, op name, op name) of each pair of collectives on one GPU
    that neither waits for the other."""
    by_gpu = {}
    for g, op in collectives(graph):
        kind, index = _device(op)
        if kind == "GPU":
            by_gpu.setdefault((g, index), []).append(op)
    loose = []
    for (_, index), ops in sorted(by_gpu.items(), key=lambda item: item[0][1]):
        waits = {op: ancestors(op) for op in ops}
        for i, a in enumerate(ops):
            loose.extend((index, a.name, b.name) for b in ops[i + 1:]
                         if a not in waits[b] and b not in waits[a])
    return loose


def gpus_with_collectives(graph):
    return {_device(op)[1] for _, op in collectives(graph) if _device(op)[0] == "GPU"}


def hints(graph, op_type="CollectiveReduceV2"):
    """{(device type, communication hint)} of the step's collectives of
    `op_type` (the all-reduces unless told)."""
    return {(_device(op)[0], op.get_attr("communication_hint").decode())
            for _, op in collectives(graph) if op.type == op_type}


def group_order(graph):
    """The group keys of `graph`'s collectives, each group once, in the order
    its edges chain them; None unless the order is total (every member of a
    group waits, through data or control edges, for every member of the
    group before it), so no two workers can open them in different orders."""
    ops = [op for _, op in collectives(graph)]
    waits = {op: ancestors(op) for op in ops}
    ordered = sorted(ops, key=lambda op: sum(other in waits[op] for other in ops))
    keys, members = [], {}
    for op in ordered:
        key = group(op)[1]
        if key not in members:
            keys.append(key)
        members.setdefault(key, []).append(op)
    for earlier, later in zip(keys, keys[1:]):
        if not all(set(members[earlier]) <= waits[op] for op in members[later]):
            return None
    return keys


def group(op):
    """(group size, group key) of a collective op, read from its constant inputs."""
    return (int(tf.get_static_value(op.inputs[1])), int(tf.get_static_value(op.inputs[2])))


@contextlib.contextmanager
def stand_in_cluster(cluster):
    """Within: `cluster` counts as joined, and the cluster exchange's start
    builds its group opener without running it (no broadcast, no collective,
    no peer watch). For tracing only."""
    saved = (cluster_lib._ACTIVE["cluster"], cross_worker.ClusterExchange.start,
             peer_watch.start)
    cluster_lib._ACTIVE["cluster"] = cluster
    cross_worker.ClusterExchange.start = lambda self, copies: setattr(
        self, "opener", self.build_opener())
    peer_watch.start = lambda *args: None
    try:
        yield
    finally:
        (cluster_lib._ACTIVE["cluster"], cross_worker.ClusterExchange.start,
         peer_watch.start) = saved
