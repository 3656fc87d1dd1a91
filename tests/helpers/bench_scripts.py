"""Scripts of bench/ and mutation/ (not packages) imported as modules, for
tests that call their main() or functions in-process."""
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")
MUTATION = os.path.join(ROOT, "mutation")


def load(name, folder=BENCH):
    """<folder>/<name>.py as a fresh module (the folder on sys.path: scripts
    import their neighbours)."""
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, os.path.join(folder, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
