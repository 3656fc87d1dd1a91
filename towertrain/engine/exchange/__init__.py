"""The exchange wing: how gradients meet.

- packing: gradients cut into flat packs and back;
- base, central, nccl, ring, compact: the local algorithms (--all_reduce_spec),
  each summing one pack over one process's devices;
- flow: the common path (packs, the extra values sent with them, the
  per-device finite check);
- local: --variable_update=replicated's exchange;
- cross_worker, keys, ordering, tail: collective_all_reduce's exchange over
  every worker, its group and instance keys, its per-GPU order and the step's
  scalar tail;
- graph_facts: what a traced step must hold on GPUs.

Adding a local algorithm: subclass AllReduce in a new module, decorate it
with @register("name"), and import the module here.
"""
from . import base
from .base import AllReduce, register, registered_names
from .compact import CompactTransfer
from .flow import Exchanged
from .local import LocalExchange
from . import central, local, nccl, ring  # noqa: F401  (registers the algorithms)

__all__ = ["AllReduce", "CompactTransfer", "Exchanged", "LocalExchange", "local_algorithm",
           "register", "registered_names"]


def local_algorithm(name, compact_dtype=None, num_packs=0, pack_bytes=None):
    """The replicated exchange by the algorithm registered as `name`; with
    compact_dtype (e.g. tf.float16), the gradients cross devices, and are
    summed, in that dtype; with num_packs > 0 (--gradient_repacking) or
    pack_bytes (--gradient_pack_mb), one sum per pack."""
    return local.create(name, compact_dtype, num_packs, pack_bytes)
