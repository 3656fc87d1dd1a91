"""BUILD stays in step with the tree (Bazel cannot build offline here, so the
file is evaluated with stand-ins for its rules)."""
import ast
import glob as globlib
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/<wing>/this file


def evaluate_build(with_namespace=False):
    targets = {}

    def rule(kind):
        def record(**kwargs):
            targets[kwargs["name"]] = dict(kwargs, kind=kind)
        return record

    def glob(patterns, exclude=()):
        found = []
        for pattern in patterns:
            found += sorted(os.path.relpath(p, ROOT)
                            for p in globlib.glob(os.path.join(ROOT, pattern), recursive=True))
        excluded = set(glob(list(exclude))) if exclude else set()
        return [path for path in found if path not in excluded]

    namespace = {"load": lambda *args: None, "glob": glob, "package": lambda **kw: None,
                 "py_library": rule("py_library"), "py_binary": rule("py_binary"),
                 "py_test": rule("py_test"), "genrule": rule("genrule")}
    with open(os.path.join(ROOT, "BUILD"), encoding="utf-8") as build:
        exec(compile(build.read(), "BUILD", "exec"), namespace)  # Starlark is Python syntax
    return (targets, namespace) if with_namespace else targets


def generated_files(targets):
    """{output path: the source file it copies} of BUILD's genrules; each must
    be a copy of its one source (`cp $< $@`), the only kind the runfiles
    layout below knows how to make."""
    copies = {}
    for name, target in targets.items():
        if target["kind"] != "genrule":
            continue
        assert target["cmd"] == "cp $< $@", f"{name}: not a plain copy: {target['cmd']}"
        assert len(target["srcs"]) == 1 and len(target["outs"]) == 1, name
        copies[target["outs"][0]] = target["srcs"][0]
    return copies


def closure(targets, name):
    """The target `name` and every target it depends on, transitively."""
    seen, todo = {}, [name]
    while todo:
        current = todo.pop().lstrip(":")
        if current not in seen:
            seen[current] = targets[current]
            todo += targets[current].get("deps", [])
    return seen


def module_name(src, root):
    """The dotted module name of `src` (a .py file) under the sys.path root
    `root`, or None when it does not sit under it."""
    relative = os.path.relpath(src, root)
    if relative.startswith(".."):
        return None
    parts = relative[:-len(".py")].split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or None


def importable(targets, name):
    """{module name: file} that a Python target can import: its own and its
    deps' srcs under a directory one of those targets names in `imports`
    (Bazel puts each on sys.path), by plain or dotted (package) name."""
    reachable = closure(targets, name).values()
    roots = {os.path.normpath(root) for target in reachable
             for root in target.get("imports", [])}
    modules = {}
    for target in reachable:
        for src in target.get("srcs", []):
            if not src.endswith(".py"):
                continue
            for root in roots:
                module = module_name(src, root)
                if module:
                    modules[module] = src
    return modules


def local_modules():
    """{module name: file} of the modules under tests/: the helpers package by
    dotted name, and every other tests/ file (test files, conftest) by its plain
    name, which a test must not import."""
    tests = os.path.join(ROOT, "tests")
    local = {}
    for path in globlib.glob(os.path.join(tests, "**", "*.py"), recursive=True):
        relative = os.path.relpath(path, tests)
        name = (module_name(relative, ".") if relative.split(os.sep)[0] == "helpers"
                else os.path.basename(path)[:-3])
        local[name] = os.path.relpath(path, ROOT)
    return local


def local_test_imports(path, local):
    """The names in `local` (the tests/ modules) that the file imports anywhere
    in it (module level or inside a function), with the packages they sit in."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    found = set()
    for name in names:
        parts = name.split(".")
        found |= {".".join(parts[:k]) for k in range(1, len(parts) + 1)
                  if ".".join(parts[:k]) in local}
    return found


def test_every_source_file_belongs_to_a_target_and_exists():
    targets = evaluate_build()
    copies = generated_files(targets)
    listed = set()
    for target in targets.values():
        for src in target.get("srcs", []) + [target.get("main")] * ("main" in target):
            src = copies.get(src, src)  # a generated file: the file it copies
            assert os.path.exists(os.path.join(ROOT, src)), src
            listed.add(src)
    for package in ("towertrain", "models", "input_pipeline", "examples"):
        for path in globlib.glob(os.path.join(ROOT, package, "**", "*.py"), recursive=True):
            assert os.path.relpath(path, ROOT) in listed, path


def test_every_python_file_is_in_a_target_or_excluded_with_a_reason():
    """tests/*.py and bench/*.py (and everything else) are accounted for: in a
    target's srcs, or in BUILD's NOT_BAZEL_TARGETS with the reason."""
    targets, namespace = evaluate_build(with_namespace=True)
    excluded = namespace.get("NOT_BAZEL_TARGETS", {})
    listed = {src for t in targets.values() for src in t.get("srcs", [])}
    for path, reason in excluded.items():
        assert os.path.exists(os.path.join(ROOT, path)), f"{path}: excluded but absent"
        assert path not in listed, f"{path}: both excluded and in a target"
        assert reason.strip(), f"{path}: excluded without a reason"
    for path in globlib.glob(os.path.join(ROOT, "**", "*.py"), recursive=True):
        relative = os.path.relpath(path, ROOT)
        if relative.split(os.sep)[0] in ("build", "dist") or ".egg-info" in relative:
            continue
        if relative == "setup.py":  # pip's, not Bazel's
            continue
        assert relative in listed or relative in excluded, (
            f"{relative}: in no BUILD target and not in NOT_BAZEL_TARGETS")


def test_every_test_target_can_import_the_test_modules_it_uses():
    """A test file's `import helpers.cli` / `from helpers import tiny_models`
    (and theirs, transitively) resolve under Bazel only if those files are in
    the target's runfiles under an `imports` root; an import of another test
    file or conftest never does (they are in no library)."""
    targets = evaluate_build()
    local = local_modules()
    checked = 0
    for name, target in targets.items():
        if target["kind"] != "py_test":
            continue
        modules = importable(targets, name)
        for src in target["srcs"]:
            needed, todo = set(), [src]
            while todo:  # what the test file imports, and what those import
                for module in local_test_imports(os.path.join(ROOT, todo.pop()), local):
                    if module not in needed:
                        needed.add(module)
                        todo.append(local[module])
            for module in sorted(needed):
                assert modules.get(module) == local[module], (
                    f"{name}: {src} imports {module}, which the target cannot import "
                    f"(not in its or its deps' srcs under an `imports` root)")
                checked += 1
    assert checked, "no test imports a tests/helpers module: the check checks nothing"


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


def test_models_and_input_pipeline_are_mapped_under_towertrain_by_copies():
    """As setup.py's package_dir maps them for pip: models/NAME.py is copied to
    towertrain/models/NAME.py (input_pipeline/ the same), and the libraries hold
    the copies only, so no top-level `models` package exists under Bazel."""
    targets = evaluate_build()
    copies = generated_files(targets)
    for package in ("models", "input_pipeline"):
        sources = sorted(os.path.relpath(p, ROOT)
                         for p in globlib.glob(os.path.join(ROOT, package, "*.py")))
        assert sources, package
        for src in sources:
            assert copies.get("towertrain/" + src) == src, f"{src}: not copied under towertrain/"
        assert sorted(targets[package]["srcs"]) == sorted("towertrain/" + s for s in sources)
    python_srcs = {src for target in targets.values() if target["kind"] != "genrule"
                   for src in target.get("srcs", [])}
    assert not {src for src in python_srcs if src.split("/")[0] in ("models", "input_pipeline")}


def runfiles(targets, name, where):
    """Lays out in `where` the Python files of target `name` and its deps as
    Bazel's runfiles hold them: each src at its path, a generated one made by
    its genrule (a copy). Returns the sys.path roots (`imports`)."""
    copies = generated_files(targets)
    reachable = closure(targets, name).values()
    for target in reachable:
        for src in target.get("srcs", []):
            os.makedirs(os.path.join(where, os.path.dirname(src)), exist_ok=True)
            shutil.copyfile(os.path.join(ROOT, copies.get(src, src)), os.path.join(where, src))
    return sorted({os.path.normpath(os.path.join(where, root))
                   for target in reachable for root in target.get("imports", [])})


def test_towertrain_models_resolve_in_a_bazel_runfiles_layout(tmp_path):
    """Under Bazel only BUILD's rules map models/ and input_pipeline/: no pip
    install, and towertrain/__init__.py finds nothing itself."""
    roots = runfiles(evaluate_build(), "towertrain_main", str(tmp_path))
    assert roots == [str(tmp_path)]
    assert not os.path.exists(os.path.join(tmp_path, "models"))
    script = (
        "import sys\n"
        # Drop the editable install's finder: under Bazel only sys.path counts.
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
        "getattr(f, '__name__', type(f).__name__).lower()]\n"
        f"sys.path[:0] = {roots!r}\n"
        "import towertrain.models, towertrain.input_pipeline.base, towertrain.models.catalog\n"
        "print(towertrain.models.__file__)\nprint(towertrain.input_pipeline.__file__)\n"
        "print(towertrain.models.build_trivial.__module__)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, done.stderr[-2000:]
    files = done.stdout.split()
    assert files[-3] == os.path.join(tmp_path, "towertrain", "models", "__init__.py")
    assert files[-2] == os.path.join(tmp_path, "towertrain", "input_pipeline", "__init__.py")
    assert files[-1] == "towertrain.models.trivial"


def test_test_file_names_are_unique_across_the_tree():
    """py_test targets are named by basename, and pytest's rootdir-relative
    import mode needs unique basenames without __init__.py in test folders."""
    paths = globlib.glob(os.path.join(ROOT, "tests", "**", "test_*.py"), recursive=True)
    names = [os.path.basename(p) for p in paths]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    targets = [t for t in evaluate_build().values() if t["kind"] == "py_test"]
    assert len(targets) == len(paths)
