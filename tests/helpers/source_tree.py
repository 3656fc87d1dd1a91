"""The package's source tree as module names: where each .py file installs
(setup.py's package_dir) and which wing it belongs to. The structure tests
(tests/package/test_import_structure.py, test_run_plan_structure.py) read it."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Where each source folder installs (setup.py's package_dir).
SOURCES = {"towertrain": "towertrain", "models": "towertrain.models",
           "input_pipeline": "towertrain.input_pipeline"}
ENTRY_POINT = "towertrain"  # the package users import; its names come from every wing


def find_modules(root, sources=SOURCES):
    """{dotted module name: file path} for every .py file under the sources."""
    found = {}
    for folder, package in sources.items():
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    rel = os.path.relpath(path, os.path.join(root, folder))[:-3]
                    parts = [p for p in rel.split(os.sep) if p != "__init__"]
                    found[".".join([package] + parts)] = path
    return found


def wing(module):
    """'towertrain.engine.tower' -> 'engine'; 'towertrain.trainer' -> 'trainer'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ENTRY_POINT
