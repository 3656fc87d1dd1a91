"""Walks over a traced step's graph: every op (nested function graphs too), an
op's requested device, its data ancestors, and the variable a placeholder stands for."""
import collections

import tensorflow as tf

from towertrain.engine.exchange.graph_facts import (  # noqa: F401 - re-exported
    ancestors, function_graphs, kept_ops)


def all_ops(graph):
    """Ops of `graph` and of every function graph nested in it (cond branches,
    loop bodies, called functions)."""
    return [op for g in function_graphs(graph) for op in g.get_operations()]


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
                       "ResourceApplyGradientDescent", "ResourceApplyKerasMomentum"):
            variable = variable_of(op.inputs[0], variables)
            if variable is not None:
                out[[id(v) for v in variables].index(id(variable))].append(op)
    return out

