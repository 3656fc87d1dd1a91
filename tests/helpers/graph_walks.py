"""Walks over a traced step's graph: every op (nested function graphs too), an
op's requested device, its data ancestors, and the variable a placeholder stands for."""
import collections

import tensorflow as tf


def all_ops(graph):
    """Ops of `graph` and of every function graph nested in it (cond branches,
    loop bodies, called functions)."""
    return [op for g in function_graphs(graph) for op in g.get_operations()]


def function_graphs(graph):
    """`graph` and every function graph nested in it, each once."""
    found, seen = [], set()

    def lookup(g, name):
        while g is not None:
            fn = g._get_function(name)  # no public lookup of a nested FuncGraph
            if fn is not None:
                return fn
            g = getattr(g, "outer_graph", None)
        return None

    def visit(g):
        found.append(g)
        for op in g.get_operations():
            for attr in op.node_def.attr:
                value = op.node_def.attr[attr]
                names = [value.func.name] if value.HasField("func") else []
                names += [f.name for f in value.list.func]
                for name in names:
                    if name and name not in seen:
                        seen.add(name)
                        fn = lookup(op.graph, name)
                        if fn is not None:
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


def ancestors(op):
    """Every op `op` waits for, through data and control inputs."""
    found, stack = set(), [op]
    while stack:
        current = stack.pop()
        for parent in [t.op for t in current.inputs] + list(current.control_inputs):
            if parent not in found:
                found.add(parent)
                stack.append(parent)
    return found


def place(op):
    """('GPU' | 'CPU', index) of an op's requested device, (None, None) if unset."""
    spec = tf.DeviceSpec.from_string(op.device)
    return (spec.device_type.upper() if spec.device_type else None), spec.device_index


def data_ancestors(op):
    found, stack = set(), [op]
    while stack:
        for tensor in stack.pop().inputs:
            if tensor.op not in found:
                found.add(tensor.op)
                stack.append(tensor.op)
    return found


def captured_object(tensor):
    """The eager tensor (e.g. a variable handle) a function placeholder stands for,
    following captures out through nested function graphs."""
    while True:
        for external, internal in tensor.graph.captures:
            if internal is tensor:
                break
        else:
            return None
        if not tf.is_symbolic_tensor(external):
            return external
        tensor = external


def variable_of(tensor, variables):
    handle = captured_object(tensor)
    for variable in variables:
        if handle is not None and handle is variable.value.handle:
            return variable
    return None


def updates_by_variable(graph, variables):
    """{variable index: [update ops]} for the resource updates in the step."""
    out = collections.defaultdict(list)
    for op in all_ops(graph):
        if op.type in ("AssignSubVariableOp", "AssignAddVariableOp", "AssignVariableOp",
                       "ResourceApplyGradientDescent"):
            variable = variable_of(op.inputs[0], variables)
            if variable is not None:
                out[[id(v) for v in variables].index(id(variable))].append(op)
    return out

