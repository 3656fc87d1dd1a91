"""Walking a traced step's graph, including what runs inside tf.cond.

The step applies its update inside a tf.cond (nothing is applied when a
gradient is not finite), so the update's ops live in the branch functions, not
in the outer graph. Placement checks use this to see every op.
"""
from towertrain import private_api

_FUNCTION_ATTRS = ("then_branch", "else_branch", "body", "cond", "f")


def all_operations(graph):
    """Every op of `graph` and, recursively, of the functions its ops call
    (cond branches, loop bodies, called functions), each function once."""
    found, seen, pending = [], set(), [graph]
    while pending:
        current = pending.pop()
        for op in current.get_operations():
            found.append(op)
            for attr in _FUNCTION_ATTRS:
                try:
                    name = op.get_attr(attr).name
                except (ValueError, AttributeError):
                    continue
                if name in seen:
                    continue
                seen.add(name)
                function = (private_api.graph_function(graph, name)
                            or private_api.graph_function(current, name))
                if function is not None:
                    pending.append(function.graph)
    return found
