"""The family of precision-only branches, found in the product's source: every
condition (if, while, conditional expression, or a boolean stored as a
decision) that reads a half-precision setting or dtype. Each is keyed by
file, enclosing definition and the condition's text (not its line), so a
moved branch keeps its key.

Run as a script, it records which way each branch went in tiny training
runs of several precisions and models: it imports the product with every
such condition wrapped in a recorder (an import hook rewriting the syntax
tree), trains one step of each run and prints a JSON object {key: {run:
[outcomes]}}.
"""
import ast
import builtins
import collections
import importlib.abc
import importlib.util
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRODUCT = os.path.join(REPO, "towertrain")
# `.half`: the Precision section's half-precision dtype (recipe/settings.py).
MARKERS = re.compile(r"\b(use_fp16|use_bf16|fp16_vars|half_precision|compact\w*|"
                     r"scaled_transfer|loss_scale|float16|bfloat16)\b|\.half\b")
# Each run: (name, its settings); both models train under each.
MODELS = ("trivial", "ckpt_tiny")  # without batch norm, with it
RUNS = {
    "float32": {},
    "fp16": {"use_fp16": True},
    "fp16_auto_scale": {"use_fp16": True, "fp16_enable_auto_loss_scale": True},
    "fp16_vars": {"use_fp16": True, "fp16_vars": True},
    "bf16": {"use_bf16": True},
    "compact": {"compact_gradient_transfer": True},
    "fp16_compact": {"use_fp16": True, "compact_gradient_transfer": True},
    "bf16_compact": {"use_bf16": True, "compact_gradient_transfer": True},
}


def _conditions(tree):
    """(qualified name of the enclosing definition, condition node) of every
    marked condition in `tree`, in source order."""
    found = []

    def visit(node, scope):
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{scope}.{child.name}" if scope else child.name
            test = None
            if isinstance(child, (ast.If, ast.IfExp, ast.While)):
                test = child.test
            elif (isinstance(child, (ast.Assign, ast.AnnAssign, ast.Return))
                  and isinstance(child.value, ast.BoolOp)):
                test = child.value
            if test is not None and MARKERS.search(ast.unparse(test)):
                found.append((scope or "<module>", test))
            visit(child, inner)
    visit(tree, "")
    return found


def keyed(path, tree):
    """{key: condition node} of one parsed product file."""
    relative = os.path.relpath(path, REPO)
    out, seen = {}, collections.Counter()
    for scope, test in _conditions(tree):
        key = f"{relative}::{scope}::{' '.join(ast.unparse(test).split())}"
        seen[key] += 1
        out[key if seen[key] == 1 else f"{key} #{seen[key]}"] = test
    return out


def product_files(root=PRODUCT):
    for directory, _, names in sorted(os.walk(root)):
        for name in sorted(names):
            if name.endswith(".py"):
                yield os.path.join(directory, name)


def branches(root=PRODUCT):
    """{key: (file, line)} of every precision-only branch of the product."""
    out = {}
    for path in product_files(root):
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        out.update({key: (path, node.lineno) for key, node in keyed(path, tree).items()})
    return out


class _Recorded(ast.NodeTransformer):
    def __init__(self, keys):
        self.keys = {id(node): key for key, node in keys.items()}

    def generic_visit(self, node):
        super().generic_visit(node)
        for field in ("test", "value"):
            value = getattr(node, field, None)
            if isinstance(value, ast.AST) and id(value) in self.keys:
                call = ast.Call(ast.Name("__precision_branch__", ast.Load()),
                                [ast.Constant(self.keys[id(value)]), value], [])
                setattr(node, field, ast.copy_location(call, value))
        return node


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Loads towertrain's modules from source with their marked conditions recorded."""

    def find_spec(self, name, path, target=None):
        if not name.startswith("towertrain."):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        origin = spec.origin or ""
        if not origin.startswith(PRODUCT) or not origin.endswith(".py"):
            return spec
        return importlib.util.spec_from_file_location(
            name, origin, loader=self, submodule_search_locations=spec.submodule_search_locations)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        path = module.__spec__.origin
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        tree = ast.fix_missing_locations(_Recorded(keyed(path, tree)).visit(tree))
        exec(compile(tree, path, "exec"), module.__dict__)


def _record_runs():
    outcomes = collections.defaultdict(lambda: collections.defaultdict(set))
    current = {"run": None}

    def record(key, value):
        outcomes[key][current["run"]].add(bool(value))
        return value
    builtins.__precision_branch__ = record
    sys.meta_path.insert(0, _Finder())
    import logging
    logging.disable(logging.WARNING)
    sys.path.insert(0, os.path.join(REPO, "tests"))
    import helpers.tiny_models  # noqa: F401 - registers ckpt_tiny
    from towertrain import Params, Trainer
    import tensorflow as tf
    # AutoGraph would convert the step's functions from their source text,
    # not the recorded tree: run them as plain Python (the same branches).
    tf.config.run_functions_eagerly(True)
    for model in MODELS:
        for run, settings in RUNS.items():
            current["run"] = f"{model}/{run}"
            half = settings.get("use_fp16") or settings.get("use_bf16")
            params = Params(model=model, device="cpu", num_gpus=2, variable_update="replicated",
                            batch_size=2, num_batches=1, num_warmup_batches=0,
                            display_every=1, allow_emulated_precision=bool(half), **settings)
            trainer = Trainer(params)
            trainer.train(write=lambda line: None)
            trainer.close()
    return {key: {run: sorted(seen) for run, seen in runs.items()}
            for key, runs in outcomes.items()}


if __name__ == "__main__":
    print(json.dumps(_record_runs()))
