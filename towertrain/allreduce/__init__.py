"""All-reduce algorithms for --variable_update=replicated, one class each.

Adding one: subclass AllReduce in a new module, decorate it with
@register("name"), and import the module here.
"""
from .base import AllReduce, create, register, registered_names
from . import central, nccl, ring  # noqa: F401  (registers the algorithms)

__all__ = ["AllReduce", "create", "register", "registered_names"]
