"""All-reduce algorithms for --variable_update=replicated, one class each.

Adding one: subclass AllReduce in a new module, decorate it with
@register("name"), and import the module here. Compact transfer
(towertrain.engine.allreduce.compact) wraps any of them.
"""
from . import base
from .base import AllReduce, register, registered_names
from .compact import CompactTransfer
from . import central, nccl, ring  # noqa: F401  (registers the algorithms)

__all__ = ["AllReduce", "CompactTransfer", "create", "register", "registered_names"]


def create(name, compact_dtype=None):
    """The algorithm registered as `name`; with compact_dtype (e.g. tf.float16),
    wrapped so that the gradients cross devices, and are summed, in that dtype."""
    algorithm = base.create(name)
    return algorithm if compact_dtype is None else CompactTransfer(algorithm, compact_dtype)
