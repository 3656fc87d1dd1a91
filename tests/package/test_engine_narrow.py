"""The engine receives narrow values, never the Trainer or the Params.

Read off the source of towertrain/engine/: no function takes a `trainer` or
`params` argument, nothing reads a `.trainer` or `.params` attribute, and no
module imports the Trainer or the Params. tf_cnn_benchmarks'
`VariableMgr(benchmark_cnn)` back-reference is what this keeps out: a part
that holds the whole run can read anything, and nobody can tell what it needs.
"""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINE = os.path.join(ROOT, "towertrain", "engine")
WIDE_NAMES = {"trainer", "params"}
WIDE_MODULES = {"towertrain.trainer", "towertrain.config.params"}
# Files still allowed a wide use, each until its rewrite lands: the list only shrinks.
PENDING = {"towertrain/engine/run/loop.py"}  # Loop(trainer): callbacks get run facts next


def wide_uses(source, filename="<source>"):
    """(line, what) for each way `source` takes or reads the trainer or Params."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            for arg in args.posonlyargs + args.args + args.kwonlyargs:
                if arg.arg in WIDE_NAMES:
                    found.append((node.lineno, f"takes {arg.arg}"))
        elif isinstance(node, ast.Attribute) and node.attr in WIDE_NAMES:
            found.append((node.lineno, f"reads .{node.attr}"))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"imports {a.name}") for a in node.names
                      if a.name in WIDE_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            found += [(node.lineno, f"imports {m}") for m in sorted(names & WIDE_MODULES)]
    return found


def engine_files():
    for dirpath, _, files in os.walk(ENGINE):
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(dirpath, name)


def uses_by_file():
    found = {}
    for path in engine_files():
        with open(path, encoding="utf-8") as f:
            uses = wide_uses(f.read(), path)
        if uses:
            found[os.path.relpath(path, ROOT)] = uses
    return found


def test_no_engine_module_takes_or_reads_the_trainer_or_the_params():
    bad = [f"{rel}:{line}: {what}" for rel, uses in uses_by_file().items()
           if rel not in PENDING for line, what in uses]
    assert bad == []


def test_the_pending_list_only_names_files_that_still_need_it():
    assert sorted(PENDING - set(uses_by_file())) == [], "done: remove them from PENDING"


def test_the_reader_sees_each_wide_use():
    source = ("from towertrain.trainer import Trainer\n"
              "from towertrain.config import params\n"
              "class Step:\n"
              "    def __init__(self, trainer):\n"
              "        self.t = trainer\n"
              "    def run(self, *, params=None):\n"
              "        return self.t.params.batch_size\n"
              "f = lambda trainer: trainer.model\n")
    assert wide_uses(source) == [
        (1, "imports towertrain.trainer"), (2, "imports towertrain.config.params"),
        (4, "takes trainer"), (6, "takes params"), (8, "takes trainer"),
        (7, "reads .params")]
