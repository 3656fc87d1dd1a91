"""All-reduce algorithms for --variable_update=replicated, one class each.

Adding one: subclass AllReduce in a new module, decorate it with
@register("name"), and import the module here. Compact transfer
(towertrain.engine.allreduce.compact) wraps any of them.
"""
from . import base
from .base import AllReduce, register, registered_names
from .compact import CompactTransfer
from .repacked import Repacked
from . import central, nccl, ring  # noqa: F401  (registers the algorithms)

__all__ = ["AllReduce", "CompactTransfer", "Repacked", "create", "register",
           "registered_names"]


def create(name, compact_dtype=None, num_packs=0, pack_bytes=None):
    """The algorithm registered as `name`; with compact_dtype (e.g. tf.float16),
    wrapped so that the gradients cross devices, and are summed, in that dtype;
    with num_packs > 0 (--gradient_repacking) or pack_bytes (--gradient_pack_mb),
    run once per pack (each pack cast to the compact dtype on its own)."""
    algorithm = base.create(name)
    if compact_dtype is not None:
        algorithm = CompactTransfer(algorithm, compact_dtype)
    if not num_packs and not pack_bytes:
        return algorithm
    return Repacked(algorithm, num_packs, pack_bytes)
