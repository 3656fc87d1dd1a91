"""Variable managers, one class per --variable_update.

Adding a mode: subclass VariableManager in a new module, decorate it with
@register("name"), and import the module here.
"""
from .base import VariableManager, create, register, registered_names
from . import collective, independent, parameter_server, replicated  # noqa: F401  (registers)

__all__ = ["VariableManager", "create", "register", "registered_names"]
