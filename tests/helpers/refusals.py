"""Refusals through the command line, in this process: `python -m towertrain`'s
own parser and main on a command line, up to the point where a run would
start work. Which refusal fired is recorded by where its error was built
(file and line), so a table of command lines can be checked against every
refusal site the code has (tests/config/test_refusal_table.py).

A command line that is NOT refused stops at a sentinel instead of joining a
cluster or training: a broken check fails its case at once, it never hangs
on a gRPC peer or trains 100 steps.
"""
import ast
import contextlib
import dataclasses
import os
import sys
import traceback

from helpers.doc_blocks import ROOT

# Where refusals live (the flag checks, the run plan and each section that
# declares settings beside its reader, a settings.py) and what raises one.
REFUSAL_DIRS = ("towertrain/config", "towertrain/plan")
DECLARATIONS = "settings.py"
REFUSAL_ERRORS = ("ParamsError", "ClusterError")
# The flag checks' parsers raise ValueError with the reason their caller's
# fail(...) puts in the message: each reason is a refusal of its own. (Other
# ValueErrors there check towertrain's own tables, not a user's input.)
REASON_FILES = ("_checks.py", "settings.py")
FAIL_HELPERS = ("fail", "_fail")  # fail(flag, value, message) raises ParamsError


class NotRefused(Exception):
    """The command line got past every check, to the start of real work."""


@dataclasses.dataclass(frozen=True)
class Site:
    path: str  # relative to the repository
    first: int  # the call's first and last line
    last: int
    source: str  # its first line, stripped

    def __str__(self):
        return f"{self.path}:{self.first}: {self.source}"


def _helper_bodies(tree):
    """Nodes inside the fail helpers themselves: their `raise` is not a site."""
    inside = set()
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef) and function.name in FAIL_HELPERS:
            inside.update(id(node) for node in ast.walk(function))
    return inside


def _is_site(node, path):
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id in FAIL_HELPERS
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
        func = node.exc.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        return name in REFUSAL_ERRORS or (name == "ValueError" and path.endswith(REASON_FILES)
                                          and path != "towertrain/config/settings.py")
    return False


def refusal_sites():
    """Every `fail(...)` call and `raise ParamsError/ClusterError(...)` in the
    flag checks, the run plan and the settings' sections, and every `raise
    ValueError(...)` (a reason) in the flag checks and sections, found by
    walking their syntax trees."""
    sites = []
    for path in _refusal_files():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            text = f.read()
        tree = ast.parse(text)
        skip = _helper_bodies(tree)
        lines = text.splitlines()
        for node in ast.walk(tree):
            if id(node) not in skip and _is_site(node, path):
                sites.append(Site(path, node.lineno, node.end_lineno,
                                  lines[node.lineno - 1].strip()))
    return sorted(sites, key=lambda s: (s.path, s.first))


def _refusal_files():
    """The flag checks, the run plan (its subpackages too), and every
    settings.py of the product."""
    paths = {os.path.relpath(os.path.join(dirpath, name), ROOT) for folder in REFUSAL_DIRS
             for dirpath, _, files in os.walk(os.path.join(ROOT, folder))
             for name in files if name.endswith(".py")}
    for top in ("towertrain", "models", "input_pipeline"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name == DECLARATIONS or name.endswith("_" + DECLARATIONS):
                    paths.add(os.path.relpath(os.path.join(dirpath, name), ROOT))
    return sorted(p.replace(os.sep, "/") for p in paths)


class Recorder:
    """Records the call stack wherever a ParamsError (ClusterError, ...) is
    built, and where the exception it was built while handling (a parser's
    ValueError) was raised."""

    def __init__(self):
        self.stacks = []

    @contextlib.contextmanager
    def recording(self, monkeypatch):
        from towertrain import errors
        original = errors.ParamsError.__init__
        stacks = self.stacks

        def init(error, *args, **kwargs):
            stacks.append(traceback.extract_stack()[:-1])
            handled = sys.exc_info()[1]
            if handled is not None and handled.__traceback__ is not None:
                stacks.append(traceback.extract_tb(handled.__traceback__))
            original(error, *args, **kwargs)
        monkeypatch.setattr(errors.ParamsError, "__init__", init)
        try:
            yield self
        finally:
            monkeypatch.setattr(errors.ParamsError, "__init__", original)

    def sites_hit(self, sites):
        """The sites among `sites` that built an error: per stack, its
        innermost frame inside a site's lines."""
        by_path = {}
        for site in sites:
            by_path.setdefault(os.path.join(ROOT, site.path), []).append(site)
        hit = set()
        for stack in self.stacks:
            for frame in reversed(stack):
                found = [s for s in by_path.get(os.path.abspath(frame.filename), ())
                         if s.first <= frame.lineno <= s.last]
                if found:
                    hit.add(found[0])
                    break
        return hit


@contextlib.contextmanager
def stopped_before_work(monkeypatch):
    """Joining a cluster and training raise NotRefused instead of running."""
    from towertrain import trainer
    from towertrain.engine.distributed import cluster

    def stop(*args, **kwargs):
        raise NotRefused("not refused: reached the start of real work")

    setup = cluster.setup

    def join(layout):  # one process: nothing to join, the run goes on to its plan
        if layout.topology.cluster is not cluster.SINGLE:
            stop()
        return setup(layout)
    monkeypatch.setattr(cluster, "setup", join)
    monkeypatch.setattr(trainer.Trainer, "train", stop)
    yield


def run_cli(args, capsys):
    """(exit status, stderr) of `python -m towertrain <args>`, in this process
    (TensorFlow already imported). Raises NotRefused when nothing refused it."""
    from absl import flags
    from towertrain.commands import train
    from towertrain.config import flags as flags_lib
    flags_lib.define_flags()
    capsys.readouterr()
    flags.FLAGS.unparse_flags()
    environment = dict(os.environ)  # main sets --mkl's and --xla's variables
    try:
        try:
            train.parse_flags(["towertrain", *args])
        except SystemExit as exit_:
            return exit_.code, capsys.readouterr().err
        status = train.main(["towertrain"])
        return status, capsys.readouterr().err
    finally:
        flags.FLAGS.unparse_flags()
        os.environ.clear()
        os.environ.update(environment)
