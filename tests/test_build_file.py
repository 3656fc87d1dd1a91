"""BUILD stays in step with the tree (Bazel cannot build offline here, so the
file is evaluated with stand-ins for its rules)."""
import glob as globlib
import os
import shutil
import subprocess
import sys

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
    for package in ("towertrain", "models", "input_pipeline", "examples"):
        for path in globlib.glob(os.path.join(ROOT, package, "**", "*.py"), recursive=True):
            assert os.path.relpath(path, ROOT) in listed, path


def test_deps_resolve_and_every_test_file_has_a_target():
    targets = evaluate_build()
    for target in targets.values():
        for dep in target.get("deps", []):
            assert dep.lstrip(":") in targets, dep
    tests = {os.path.basename(p)[:-3] for p in globlib.glob(os.path.join(ROOT, "tests", "test_*.py"))}
    assert tests <= {name for name, t in targets.items() if t["kind"] == "py_test"}


def test_libraries_put_the_root_on_the_path_and_examples_have_targets():
    targets = evaluate_build()
    for name in ("towertrain", "models", "input_pipeline"):
        assert targets[name].get("imports") == ["."], name
    for example in globlib.glob(os.path.join(ROOT, "examples", "*.py")):
        name = "example_" + os.path.basename(example)[:-3]
        assert targets[name]["kind"] == "py_binary", name
        assert ":towertrain" in targets[name]["deps"]


def test_towertrain_models_resolve_in_a_bazel_runfiles_layout(tmp_path):
    """Bazel lays the repository out as it is (models/ beside towertrain/) and puts
    the imports root on sys.path; no pip mapping exists there."""
    for package in ("towertrain", "models", "input_pipeline"):
        shutil.copytree(os.path.join(ROOT, package), os.path.join(tmp_path, package),
                        ignore=shutil.ignore_patterns("__pycache__"))
    script = (
        "import sys\n"
        # Drop the editable install's finder: under Bazel only sys.path counts.
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
        "getattr(f, '__name__', type(f).__name__).lower()]\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import towertrain.models, towertrain.input_pipeline\n"
        "print(towertrain.models.__file__)\nprint(towertrain.input_pipeline.__file__)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, done.stderr[-2000:]
    files = done.stdout.split()
    assert files[-2].startswith(str(tmp_path)) and files[-2].endswith("models/__init__.py")
    assert files[-1].startswith(str(tmp_path))
