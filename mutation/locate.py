"""Where a breakage applies, found by syntax rather than by file and line.

A hand-written breakage names the code it changes by the definition that
holds it, never by a path:

    At("StagedInput.tower_batches")           a method (class, then method)
    At("split_to_devices")                    a function (any module)
    At("exchange_packs.run")                  a function nested in another
    At("GPU_MINIMUM")                         a module-level assignment
    At("learning_rate", module="schedule")    a name defined in several modules
    Module("plan.steps")                      a module's code in no definition
                                              (its imports)

The definitions are functions, classes and assignments at module or class
level, at any depth of classes and functions (not assignments inside a
function: their text belongs to the function).

Every product .py file (towertrain/, models/, input_pipeline/) is parsed;
the name must be defined exactly once. What survives what:

- a file moved to another folder or renamed: nothing to do (the search is
  over the whole product);
- a definition renamed, or moved into another class: the entry breaks (the
  check names it) and is updated by hand, as the code now says something else;
- a name defined in several modules needs `module`, the dotted module name or
  any suffix of it on dot boundaries ("ring", "exchange.ring",
  "towertrain.engine.exchange.ring"). The hint is read only when the name is
  ambiguous, so a stale hint on a name that became unique costs nothing; the
  shortest suffix (the file's basename) survives a move to another folder.
  Where one module defines the name twice (a property and its setter), the
  definition holding the old text is the one.

Inside the definition's lines (its decorators to its last line) the old text
must occur exactly once. When it does not occur at all, the same text shifted
by a uniform indentation is tried (code moved into or out of a class or a
block), and the new text is shifted alike.

Files that are not product code (docs, README, BUILD, bench/ scripts) are
named by path, File("README.md"), and the old text must occur once in the file.
`enclosing` is the inverse: the smallest definition around a text, for a new
entry (mutations.py --where) and for re-placing entries after a move.
"""
import ast
import dataclasses
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRODUCT = ("towertrain", "models", "input_pipeline")
_SKIPPED_DIRS = {"__pycache__"}
_LARGEST_SHIFT = 16  # spaces of indentation a moved block may have gained or lost


@dataclasses.dataclass(frozen=True, repr=False)
class At:
    """A definition of the product: its qualified name, and (only when the
    name is defined in several modules) a dotted module-name suffix."""
    name: str
    module: str = None

    def __repr__(self):  # as an entry writes it
        return f'At("{self.name}"' + (f', module="{self.module}")' if self.module else ")")

    def __str__(self):
        return self.name + (f" (module {self.module})" if self.module else "")


@dataclasses.dataclass(frozen=True, repr=False)
class Module:
    """A whole product module, for code in no definition (its imports, a
    statement run on import): a dotted module-name suffix matching one module."""
    name: str

    def __repr__(self):
        return f'Module("{self.name}")'

    def __str__(self):
        return f"module {self.name}"


@dataclasses.dataclass(frozen=True, repr=False)
class File:
    """A file that is not product code, by its path from the repository root."""
    path: str

    def __repr__(self):
        return f'File("{self.path}")'

    def __str__(self):
        return self.path


class Unresolved(Exception):
    """An entry's place or text is not found exactly once."""


@dataclasses.dataclass(frozen=True)
class Definition:
    name: str      # qualified: "Class.method", "outer.inner", "CONSTANT"
    module: str    # dotted, from the path: "towertrain.engine.exchange.ring"
    path: str      # from the repository root
    first_line: int  # 1-based, decorators included
    last_line: int

    def matches(self, hint):
        return self.module == hint or self.module.endswith("." + hint)


def module_name(path):
    parts = path[:-len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def product_files(root=ROOT):
    """Every product .py file, as a path from `root` with / separators."""
    found = []
    for package in PRODUCT:
        for folder, dirs, files in os.walk(os.path.join(root, package)):
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
            found += [os.path.relpath(os.path.join(folder, f), root).replace(os.sep, "/")
                      for f in sorted(files) if f.endswith(".py")]
    return found


def _assigned_names(node):
    targets = (node.targets if isinstance(node, ast.Assign) else [node.target])
    names = []
    for target in targets:
        elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        names += [e.id for e in elements if isinstance(e, ast.Name)]
    return names


def definitions(tree, path):
    """Every function, class and module- or class-level assignment in a parsed
    file, with its qualified name. Blocks that are not scopes (if, try, with)
    add nothing to the name: a def inside `if TYPE_CHECKING:` is still `f`."""
    module = module_name(path)
    found = []

    def visit(body, prefix, in_function):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                name = prefix + node.name
                found.append(Definition(name, module, path, first, node.end_lineno))
                visit(node.body, name + ".", not isinstance(node, ast.ClassDef))
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and not in_function:
                found.extend(Definition(prefix + n, module, path, node.lineno, node.end_lineno)
                             for n in _assigned_names(node))
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    visit(getattr(node, field, []) or [], prefix, in_function)
    visit(tree.body, "", False)
    return found


class Index:
    """The product's definitions by qualified name, parsed once per tree."""

    def __init__(self, root=ROOT):
        self.root = root
        self.by_name = {}
        self.sources = {}
        self.modules = {}  # dotted name -> path
        for path in product_files(root):
            with open(os.path.join(root, path), encoding="utf-8") as f:
                text = f.read()
            self.sources[path] = text
            self.modules[module_name(path)] = path
            for definition in definitions(ast.parse(text, path), path):
                self.by_name.setdefault(definition.name, []).append(definition)

    def module_path(self, name):
        """The file of the one module whose dotted name is `name` or ends
        with "." + name ("steps", "plan.steps"), or Unresolved."""
        paths = [path for module, path in self.modules.items()
                 if module == name or module.endswith("." + name)]
        if len(paths) != 1:
            raise Unresolved(f"module {name}: matches {len(paths)} modules (expected one)")
        return paths[0]

    def find(self, at):
        """The Definitions `at` can name: one module's (several only where a
        module defines the name twice, a property's setter say), or
        Unresolved saying why not."""
        candidates = self.by_name.get(at.name, [])
        if not candidates:
            raise Unresolved(f"{at.name}: defined nowhere in {', '.join(PRODUCT)}")
        if len(candidates) > 1 and at.module:
            hinted = [c for c in candidates if c.matches(at.module)]
            if not hinted:
                raise Unresolved(f"{at}: the module matches none of "
                                 f"{', '.join(c.module for c in candidates)}")
            candidates = hinted
        if len({c.module for c in candidates}) > 1:
            raise Unresolved(f"{at}: defined in several modules "
                             f"({', '.join(c.module for c in candidates)}); "
                             f"name one with module=")
        return candidates


def _line_offsets(text):
    offsets, position = [0], 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        offsets.append(position)
    return offsets


def _shift(text, spaces, starts_a_line):
    """`text` with `spaces` more (or, negative, fewer) leading spaces on each
    non-blank line; the first line only when it starts a line. None when a
    line has too few spaces to lose."""
    lines = text.split("\n")
    shifted = []
    for i, line in enumerate(lines):
        if (i == 0 and not starts_a_line) or not line.strip():
            shifted.append(line)
        elif spaces >= 0:
            shifted.append(" " * spaces + line)
        elif line[:-spaces].strip(" ") == "" and len(line) > -spaces:
            shifted.append(line[-spaces:])
        else:
            return None
    return "\n".join(shifted)


def find_text(region, old, new, where):
    """(offset in region, old text as found, new text to put there). The
    exact text first; else one uniform indentation shift that makes it occur
    exactly once."""
    count = region.count(old)
    if count == 1:
        return region.index(old), old, new
    if count > 1:
        raise Unresolved(f"{where}: the old text occurs {count} times (expected once)")
    starts_a_line = old[:1] in (" ", "\t")
    found = []
    for spaces in range(-_LARGEST_SHIFT, _LARGEST_SHIFT + 1):
        shifted = _shift(old, spaces, starts_a_line) if spaces else None
        if shifted and shifted != old and region.count(shifted) == 1:
            found.append((spaces, shifted, region.index(shifted)))
    # Fewer leading spaces match inside more: a text that starts a line takes
    # the shift that puts it at a line's start.
    whole_lines = [f for f in found if f[2] == 0 or region[f[2] - 1] == "\n"]
    if len(found) == 1 or (starts_a_line and len(whole_lines) == 1):
        spaces, shifted, offset = found[0] if len(found) == 1 else whole_lines[0]
        return offset, shifted, _shift(new, spaces, starts_a_line) or new
    raise Unresolved(f"{where}: the old text is not there" if not found else
                     f"{where}: the old text occurs in several places once re-indented")


@dataclasses.dataclass(frozen=True)
class Patch:
    """A resolved entry: replace `old` by `new` at `offset` of file `path`."""
    path: str
    offset: int
    old: str
    new: str
    where: str  # for messages: "towertrain/engine/exchange/ring.py, in ring_all_reduce"


def resolve(place, old, new, index=None, root=ROOT):
    """The Patch an entry's place and texts make, or Unresolved."""
    root = index.root if index else root
    if isinstance(place, File):
        full = os.path.join(root, place.path)
        if not os.path.exists(full):
            raise Unresolved(f"{place.path} does not exist")
        with open(full, encoding="utf-8") as f:
            text = f.read()
        offset, old, new = find_text(text, old, new, place.path)
        return Patch(place.path, offset, old, new, place.path)
    index = index or Index(root)
    if isinstance(place, Module):
        path = index.module_path(place.name)
        offset, old, new = find_text(index.sources[path], old, new, path)
        return Patch(path, offset, old, new, path)
    found, problems = [], []
    for definition in index.find(place):  # one module: its definitions of the name
        text = index.sources[definition.path]
        lines = _line_offsets(text)
        start, end = lines[definition.first_line - 1], lines[definition.last_line]
        where = f"{definition.path}, in {definition.name}"
        try:
            offset, old_found, new_found = find_text(text[start:end], old, new, where)
        except Unresolved as problem:
            problems.append(str(problem))
            continue
        found.append(Patch(definition.path, start + offset, old_found, new_found, where))
    if len(found) == 1:
        return found[0]
    if found:
        raise Unresolved(f"{place}: the old text is in {len(found)} of its definitions")
    raise Unresolved("; ".join(problems))


def apply(patch, root):
    """Writes the patch into the tree at `root` (a scratch copy)."""
    path = os.path.join(root, patch.path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text[patch.offset:patch.offset + len(patch.old)] != patch.old:
        raise Unresolved(f"{patch.where}: the file changed since it was resolved")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:patch.offset] + patch.new + text[patch.offset + len(patch.old):])


def enclosing(path, old, index=None, root=ROOT):
    """The place naming the smallest definition around `old`'s one occurrence
    (re-indented or not) in the file `path`: what a new entry writes
    (mutations.py --where). A Module() when the text sits in no definition
    (an import); File(path) for a file that is not product code."""
    index = index or Index(root)
    if path not in index.sources:  # not product code: named by its path
        resolve(File(path), old, old, root=root)
        return File(path)
    start, found, _ = find_text(index.sources[path], old, old, path)
    return place_of(path, start, start + len(found), index)


def place_of(path, start, end, index):
    """The place of the smallest definition of product file `path` holding
    the characters start..end, with the module hint its name needs."""
    lines = _line_offsets(index.sources[path])
    around = [d for ds in index.by_name.values() for d in ds
              if d.path == path and lines[d.first_line - 1] <= start
              and end <= lines[d.last_line]]
    if not around:
        return Module(_shortest_suffix(module_name(path), list(index.modules)))
    smallest = min(around, key=lambda d: (d.last_line - d.first_line, -d.name.count(".")))
    modules = sorted({d.module for d in index.by_name[smallest.name]})
    if len(modules) == 1:
        return At(smallest.name)
    return At(smallest.name, _shortest_suffix(smallest.module, modules))


def _shortest_suffix(module, modules):
    """The shortest dotted suffix of `module` that no other of `modules` ends with."""
    parts = module.split(".")
    for k in range(1, len(parts) + 1):
        hint = ".".join(parts[-k:])
        if [m for m in modules if m == hint or m.endswith("." + hint)] == [module]:
            return hint
    raise AssertionError(f"{module}: no suffix names it alone")
