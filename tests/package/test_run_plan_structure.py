"""How data flows through the house, read off the source (towertrain.plan):

- who reads Params: config/, the plan, commands/, trainer.py, the public
  entry point and the settings' sections' refusals (a settings.py beside its
  reader); every other module is on an allow-list that may only shrink;
- nothing in engine/, state/ or the built-in callbacks takes the Trainer;
- the cluster is resolved by one function, once per process; the GPU list is
  read in one place;
- the plan and config/ import no TensorFlow or Keras at module level;
- Trainer.__init__ stays short, TrainStep takes no trainer, engine/'s top
  level holds at most 12 modules.
"""
import ast
import os
import subprocess
import sys

import pytest

from helpers.source_tree import ROOT, find_modules, wing

# Wings that decide from the flags: they may read Params.
PARAMS_WINGS = ("config", "plan", "commands", "trainer")
ENTRY_POINT = "towertrain"  # `import towertrain` re-exports Params for users
# Modules outside those wings that still read Params. It may only shrink: a
# module that stops reading Params must leave it (the test says so).
PARAMS_ALLOWED = set()
# Params' own derived values: reading one is reading Params.
PARAMS_PROPERTIES = ("resolved_device", "resolved_data_format", "resolved_parameter_device",
                     "resolved_all_reduce_spec", "resolved_num_batches")
NO_TRAINER_WINGS = ("engine", "state", "callbacks")


def _tree(path):
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), path)


def _arguments(function):
    args = function.args
    return [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs] + [
        a.arg for a in (args.vararg, args.kwarg) if a is not None]


def params_reads(path):
    """Where a module reads Params: a `params` argument, a `.params` attribute,
    a Params property, or an import of the Params class or its module."""
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if "params" in _arguments(node):
                found.append(f"line {node.lineno}: takes params")
        elif isinstance(node, ast.Attribute) and node.attr in ("params",) + PARAMS_PROPERTIES:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom):
            names = {alias.name for alias in node.names}
            if node.module == "towertrain.config.params" or (
                    node.module in ("towertrain", "towertrain.config") and
                    names & {"Params", "params"}):
                found.append(f"line {node.lineno}: imports Params")
        elif isinstance(node, ast.Import):
            if any(alias.name == "towertrain.config.params" for alias in node.names):
                found.append(f"line {node.lineno}: imports Params")
    return found


def trainer_uses(path):
    """Where a module takes or holds the Trainer: a `trainer` argument or
    attribute, or an import of towertrain.trainer."""
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if "trainer" in _arguments(node):
                found.append(f"line {node.lineno}: takes trainer")
        elif isinstance(node, ast.Attribute) and node.attr == "trainer":
            found.append(f"line {node.lineno}: .trainer")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names]
            module = getattr(node, "module", None) or ""
            if "towertrain.trainer" in names + [module] or (
                    module == "towertrain" and "trainer" in names):
                found.append(f"line {node.lineno}: imports towertrain.trainer")
    return found


@pytest.fixture(scope="module")
def modules():
    return find_modules(ROOT)


def is_declaration(name):
    """A settings.py beside its reader: its sections' refusals check the
    Params they are collected into, as config/ does."""
    return name.endswith((".settings", "_settings"))


def test_params_is_read_only_where_the_flags_are_decided(modules):
    readers = {name: where for name, path in modules.items()
               if wing(name) not in PARAMS_WINGS and name != ENTRY_POINT
               and not is_declaration(name)
               for where in [params_reads(path)] if where}
    unexpected = {n: w for n, w in readers.items() if n not in PARAMS_ALLOWED}
    assert unexpected == {}, "read Params outside config/, the plan, commands/, trainer.py"
    stale = sorted(PARAMS_ALLOWED - set(readers))
    assert stale == [], f"no longer read Params: take them off PARAMS_ALLOWED: {stale}"


def test_no_engine_state_or_callback_module_takes_the_trainer(modules):
    users = {name: where for name, path in modules.items()
             if wing(name) in NO_TRAINER_WINGS for where in [trainer_uses(path)] if where}
    assert users == {}


def test_the_checkers_see_what_they_look_for(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("from towertrain.config.params import Params\n"
                    "def f(params, trainer):\n    return trainer.params.resolved_device\n"
                    "class C:\n    def g(self):\n        return self.loop.trainer\n")
    assert len(params_reads(str(path))) == 4
    assert len(trainer_uses(str(path))) == 2
    path.write_text("def f(plan, loss):\n    return plan.steps.total, loss.weight_decay\n")
    assert params_reads(str(path)) == [] and trainer_uses(str(path)) == []


def _calls(modules, predicate):
    """{module: [line, ...]} of the calls `predicate(call node)` accepts."""
    found = {}
    for name, path in modules.items():
        lines = [node.lineno for node in ast.walk(_tree(path))
                 if isinstance(node, ast.Call) and predicate(node)]
        if lines:
            found[name] = lines
    return found


def _called_name(call):
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def test_the_gpu_list_is_read_in_one_place(modules):
    readers = _calls(modules, lambda c: _called_name(c) == "list_physical_devices" and any(
        isinstance(a, ast.Constant) and a.value == "GPU" for a in c.args))
    assert list(readers) == ["towertrain.config.machine"]


def test_one_module_resolves_clusters(modules):
    resolvers = _calls(modules, lambda c: _called_name(c) in (
        "TFConfigClusterResolver", "SlurmClusterResolver", "from_flags"))
    # Slurm's step is read below Params (config.slurm_gpus), which sets the
    # task's GPUs before Params asks TensorFlow for devices; plan.cluster
    # takes its tasks from there.
    assert set(resolvers) == {"towertrain.plan.cluster", "towertrain.config.slurm_gpus"}


# A CLI run with spies on the one cluster resolution and on applying the
# runtime settings: each must run once.
SPY = """
import atexit, sys
from towertrain.plan import cluster
from towertrain.engine.process import runtime
calls = {"resolved": 0, "configured": 0}
def spy(module, name, key):
    real = getattr(module, name)
    def counted(*args):
        calls[key] += 1
        return real(*args)
    setattr(module, name, counted)
spy(cluster, "_resolve", "resolved")
spy(runtime, "_apply_runtime", "configured")
atexit.register(lambda: print("CALLS", calls["resolved"], calls["configured"]))
from towertrain.commands import train
sys.argv = ["towertrain"] + sys.argv[1:]
train.run()
"""


@pytest.mark.slow
def test_a_cli_run_resolves_its_cluster_and_configures_its_runtime_once(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", SPY, "--device=cpu", "--num_gpus=2", "--num_batches=2",
         "--num_warmup_batches=0", "--variable_update=replicated", "--batch_size=4",
         f"--train_dir={tmp_path / 'run'}"],
        capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "CALLS 1 1", done.stdout[-2000:]


def _module_level_imports(path):
    """Names imported by a module's top-level statements (function bodies excluded)."""
    names = []
    pending = list(_tree(path).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            pending += [child for child in ast.iter_child_nodes(node)
                        if isinstance(child, ast.stmt)]
            pending += [s for h in getattr(node, "handlers", []) for s in h.body]
    return names


def test_the_plan_and_config_import_no_tensorflow_at_module_level(modules):
    """Following every module-level import from the plan and config/, no
    module reached imports TensorFlow or Keras when it loads."""
    heavy = {}
    for start in [m for m in modules if wing(m) in ("plan", "config")]:
        seen, pending = set(), [start]
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            for imported in _module_level_imports(modules[name]):
                if imported.split(".")[0] in ("tensorflow", "keras"):
                    heavy.setdefault(start, []).append(f"{name} imports {imported}")
                parts = imported.split(".")
                # A module's packages run first: towertrain.models.catalog runs models/__init__.
                for k in range(2, len(parts) + 1):
                    if ".".join(parts[:k]) in modules:
                        pending.append(".".join(parts[:k]))
    assert heavy == {}


def _code_lines(function):
    """Lines of code in a function's body: no docstring, blank or comment lines."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    lines = set()
    for statement in body:
        for node in ast.walk(statement):
            if hasattr(node, "lineno"):
                lines.update(range(node.lineno, getattr(node, "end_lineno", node.lineno) + 1))
    return lines


def _method(modules, module, cls, method):
    for node in ast.walk(_tree(modules[module])):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    return item
    raise AssertionError(f"{module}.{cls}.{method} not found")


def _comment_lines(path):
    with open(path, encoding="utf-8") as f:
        return {n for n, line in enumerate(f, 1) if line.strip().startswith("#")}


def test_trainer_init_is_at_most_40_lines_of_code(modules):
    init = _method(modules, "towertrain.trainer", "Trainer", "__init__")
    code = _code_lines(init) - _comment_lines(modules["towertrain.trainer"])
    assert len(code) <= 40, f"Trainer.__init__ has {len(code)} lines of code"


def test_train_step_takes_no_trainer(modules):
    init = _method(modules, "towertrain.engine.step.train_step", "TrainStep", "__init__")
    assert "trainer" not in _arguments(init)


def test_engine_top_level_holds_at_most_12_modules():
    engine = os.path.join(ROOT, "towertrain", "engine")
    top = [n for n in os.listdir(engine) if n.endswith(".py") and n != "__init__.py"]
    assert len(top) <= 12, sorted(top)
