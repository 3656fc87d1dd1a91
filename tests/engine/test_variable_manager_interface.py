"""The variable-manager base declares everything the engine uses of a manager,
and every registered --variable_update mode provides it.

The uses are read off the source: attribute accesses on the manager in
towertrain/trainer.py and the step it builds (towertrain/engine/step/train_step.py and
towers.py, where the manager is `self.variables`), and in evaluation and checkpoints (where it
is `manager` / `self.manager`).
"""
import ast
import inspect
import os

import pytest

from towertrain.engine import variable_mgr
from towertrain.engine.variable_mgr import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# file -> the expressions that hold the manager there.
USERS = {
    "towertrain/trainer.py": {"self.variables", "trainer.variables"},
    "towertrain/engine/step/train_step.py": {"self.variables", "trainer.variables"},
    "towertrain/engine/step/towers.py": {"self.variables"},
    "towertrain/engine/evaluation/evaluator.py": {"self.manager", "trainer.variables"},
    "towertrain/state/checkpoint.py": {"self.manager", "manager"},
}


def used_attributes(path, holders):
    """{attribute: first line} of `<holder>.<attribute>` in the file."""
    with open(os.path.join(ROOT, path)) as f:
        tree = ast.parse(f.read())
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) in holders:
            found.setdefault(node.attr, node.lineno)
    return found


def all_uses():
    uses = {}
    for path, holders in USERS.items():
        for attribute, line in used_attributes(path, holders).items():
            uses.setdefault(attribute, f"{path}:{line}")
    return uses


def test_the_reader_sees_the_trainers_uses():
    uses = all_uses()
    for expected in ("synchronous", "apply", "tower_inputs", "primary_variables",
                     "iterations", "cluster_count",
                     "optimizers", "trainable_copies", "non_trainable_copies"):
        assert expected in uses, f"{expected} not found: the reader misses uses"


def test_every_use_is_declared_on_the_base():
    undeclared = {attribute: where for attribute, where in all_uses().items()
                  if not hasattr(base.VariableManager, attribute)}
    assert not undeclared, ("used on a variable manager but not declared on "
                            f"base.VariableManager: {undeclared}")


def test_declared_methods_are_documented():
    for attribute in all_uses():
        member = getattr(base.VariableManager, attribute)
        if callable(member):
            assert inspect.getdoc(member), f"VariableManager.{attribute} has no docstring"


@pytest.mark.parametrize("mode", variable_mgr.registered_names())
def test_every_registered_manager_provides_every_use(mode):
    cls = base._MODES.get(mode)
    assert issubclass(cls, base.VariableManager)
    assert not inspect.isabstract(cls), f"{cls.__name__} leaves {cls.__abstractmethods__} open"
    for attribute in all_uses():
        assert hasattr(cls, attribute), f"{cls.__name__} lacks {attribute}"


@pytest.mark.parametrize("mode", variable_mgr.registered_names())
def test_apply_accepts_the_grad_scale_the_step_may_pass(mode):
    parameters = inspect.signature(base._MODES.get(mode).apply).parameters
    assert "grad_scale" in parameters, f"{mode}: apply() does not take grad_scale"
