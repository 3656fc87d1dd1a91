"""Scripts of bench/ (not a package) imported as modules, for tests that call
their main() in-process."""
import importlib.util
import os
import sys

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "bench")


def load(name):
    """bench/<name>.py as a fresh module (bench/ on sys.path: scripts import
    their neighbours)."""
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
