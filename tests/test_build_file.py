"""BUILD stays in step with the tree (Bazel cannot build offline here, so the
file is evaluated with stand-ins for its rules)."""
import glob as globlib
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def evaluate_build():
    targets = {}

    def rule(kind):
        def record(**kwargs):
            targets[kwargs["name"]] = dict(kwargs, kind=kind)
        return record

    def glob(patterns):
        found = []
        for pattern in patterns:
            found += sorted(os.path.relpath(p, ROOT)
                            for p in globlib.glob(os.path.join(ROOT, pattern), recursive=True))
        return found

    namespace = {"load": lambda *args: None, "glob": glob, "package": lambda **kw: None,
                 "py_library": rule("py_library"), "py_binary": rule("py_binary"),
                 "py_test": rule("py_test")}
    with open(os.path.join(ROOT, "BUILD"), encoding="utf-8") as build:
        exec(compile(build.read(), "BUILD", "exec"), namespace)  # Starlark is Python syntax
    return targets


def test_every_source_file_belongs_to_a_target_and_exists():
    targets = evaluate_build()
    listed = set()
    for target in targets.values():
        for src in target.get("srcs", []) + [target.get("main")] * ("main" in target):
            assert os.path.exists(os.path.join(ROOT, src)), src
            listed.add(src)
    for package in ("towertrain", "models", "input_pipeline"):
        for path in globlib.glob(os.path.join(ROOT, package, "**", "*.py"), recursive=True):
            assert os.path.relpath(path, ROOT) in listed, path


def test_deps_resolve_and_every_test_file_has_a_target():
    targets = evaluate_build()
    for target in targets.values():
        for dep in target.get("deps", []):
            assert dep.lstrip(":") in targets, dep
    tests = {os.path.basename(p)[:-3] for p in globlib.glob(os.path.join(ROOT, "tests", "test_*.py"))}
    assert tests <= {name for name, t in targets.items() if t["kind"] == "py_test"}
