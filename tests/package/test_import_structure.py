"""The house's shape, read off the source: no import circle, arrows only point down.

Every import counts, the ones inside functions too (a deferred import still
makes a circle, only a later one). The wings, lowest first (docs/architecture.md "How a step
works" draws them):

    errors, private_api,         import nothing of towertrain
    tf_import, tf_errors
    models, input_pipeline       define layers and input; never the engine
    config                       Params and flags
    plan                         the run plan: Params + machine facts, once
    recipe                       what one update does
    engine                       devices, towers, the step, exchange, loop
    state                        checkpoints, the run record, export
    callbacks                    one concern each
    trainer                      the library's Trainer: wires the wings
    commands                     every command line; nothing imports them

A settings declaration (a `settings.py` beside its reader, declaring that
component's settings: towertrain/recipe/settings.py, ...; beside a package
that imports TensorFlow, a `NAME_settings.py` next to it: engine/exchange_settings.py) and the way to
declare one (towertrain.config.declare) stand below config, whatever their
folder: config collects them into Params and the flags, and their readers
take them. They import only each other, the models' names and errors.

`python -m towertrain[.export|.scaling]` start through launchers
(towertrain/__main__.py, export.py, scaling.py) whose only code is a
`__main__` guard, and towertrain/__init__.py is the lazy public entry point.
"""
import ast

import pytest

from helpers.source_tree import ENTRY_POINT, ROOT, SOURCES, find_modules, wing

LAYERS = [("errors", "private_api", "tf_import", "tf_errors"), ("models", "input_pipeline"), ("config",), ("plan",),
          ("recipe",), ("engine",), ("state",), ("callbacks",), ("trainer",), ("commands",)]
DECLARE = "towertrain.config.declare"
# Where the declarations rank: above models and input, below config.
DECLARATIONS_RANK = 1.5
LAUNCHERS = ("towertrain.__main__", "towertrain.export", "towertrain.scaling", "towertrain.launch")


def imports_of(name, path, modules):
    """The towertrain modules `name` imports anywhere in its file (module level,
    functions, `if` blocks), relative imports resolved; `from pkg import x`
    counts as importing pkg.x when that is a module."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = name.split(".") if path.endswith("__init__.py") else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                child = f"{source}.{alias.name}"
                found.add(child if child in modules else source)
    return {m for m in found if m in modules and m != name}


def import_graph(root, sources=SOURCES):
    modules = find_modules(root, sources)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph):
    """Every strongly connected group of more than one module (Tarjan)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def is_declaration(module):
    """A module that declares settings beside their reader, or the way to."""
    return module == DECLARE or (module.endswith(("settings", "_settings"))
                                 and module != "towertrain.config.settings")


def rank(module):
    if is_declaration(module):
        return DECLARATIONS_RANK
    for level, wings in enumerate(LAYERS):
        if wing(module) in wings:
            return level
    return None


def upward_imports(graph):
    """(importer, imported) pairs that point up the layers or sideways across
    wings of one layer (models <-> input_pipeline)."""
    bad = []
    for importer, targets in graph.items():
        if importer in LAUNCHERS or importer == ENTRY_POINT:
            continue
        for target in targets:
            if is_declaration(target) and is_declaration(importer):
                continue  # declarations use the way to declare, and each other
            if wing(target) == wing(importer) and \
                    is_declaration(target) == is_declaration(importer):
                continue
            if target == ENTRY_POINT:
                if wing(importer) != "commands":  # the entry point's names hide their wing
                    bad.append((importer, target))
                continue
            if rank(importer) is None or rank(target) is None or rank(target) >= rank(importer):
                bad.append((importer, target))
    return sorted(bad)


@pytest.fixture(scope="module")
def graph():
    return import_graph(ROOT)


def test_every_module_belongs_to_a_wing(graph):
    homeless = [m for m in graph
                if m not in LAUNCHERS and m != ENTRY_POINT and rank(m) is None]
    assert not homeless, f"modules outside the wings {LAYERS}: {homeless}"


def test_no_import_circle(graph):
    assert cycles(graph) == []


def test_arrows_only_point_down(graph):
    assert upward_imports(graph) == []


def test_nothing_outside_commands_imports_a_command(graph):
    bad = [(m, t) for m, targets in graph.items() for t in targets
           if wing(t) == "commands" and wing(m) != "commands" and m not in LAUNCHERS]
    assert bad == []


def test_models_and_input_never_import_the_engine(graph):
    bad = [(m, t) for m, targets in graph.items() for t in targets
           if wing(m) in ("models", "input_pipeline")
           and wing(t) not in ("models", "input_pipeline", "errors", "private_api",
                               "tf_errors")]
    assert bad == []


def test_launchers_only_start_their_command():
    """Importing a launcher runs nothing: its body is a docstring and one
    `if __name__ == "__main__":` block."""
    modules = find_modules(ROOT)
    for name in LAUNCHERS:
        with open(modules[name], encoding="utf-8") as f:
            body = ast.parse(f.read()).body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        if name == "towertrain.__main__":
            continue  # only ever run as a script
        assert len(body) == 1 and isinstance(body[0], ast.If), name
        assert ast.unparse(body[0].test) == "__name__ == '__main__'", name


# The checker itself, on a small tree written here: it must see a circle made
# only by a function-level import, an upward arrow, and relative imports.
def _write_tree(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(tmp_path)


def test_the_checker_sees_a_circle_through_a_function_level_import(tmp_path):
    root = _write_tree(tmp_path, {
        "towertrain/__init__.py": "",
        "towertrain/engine/__init__.py": "",
        "towertrain/engine/sync.py": "from towertrain.models import Layer\n",
        "models/__init__.py": "from .layers import Layer\n",
        "models/layers.py": ("class Layer:\n    def call(self):\n"
                             "        from towertrain.engine import sync\n"),
    })
    graph = import_graph(root)
    assert graph["towertrain.models"] == {"towertrain.models.layers"}
    assert cycles(graph) == [["towertrain.engine.sync", "towertrain.models",
                              "towertrain.models.layers"]]
    assert ("towertrain.models.layers", "towertrain.engine.sync") in upward_imports(graph)


def test_the_checker_passes_a_tree_whose_arrows_point_down(tmp_path):
    root = _write_tree(tmp_path, {
        "towertrain/__init__.py": "",
        "towertrain/errors.py": "",
        "towertrain/engine/__init__.py": "",
        "towertrain/engine/tower.py": ("from towertrain import errors\n"
                                       "def f():\n    from towertrain.models import layers\n"),
        "towertrain/commands/__init__.py": "",
        "towertrain/commands/train.py": "from ..engine import tower\n",
        "models/__init__.py": "",
        "models/layers.py": "from towertrain.errors import *\n",
    })
    graph = import_graph(root)
    assert graph["towertrain.commands.train"] == {"towertrain.engine.tower"}
    assert graph["towertrain.engine.tower"] == {"towertrain.errors", "towertrain.models.layers"}
    assert cycles(graph) == [] and upward_imports(graph) == []
