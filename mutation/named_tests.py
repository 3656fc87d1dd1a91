"""Whether the tests an entry names exist, read from the test files' syntax
(no import, no TensorFlow): "tests/a/test_x.py", "...::test_f",
"...::TestClass::test_f" and "...::test_f[id]".

A parametrized id is checked against the ids pytest would make when the
decorator's values are literals (or names bound to literals, through
sorted/list/tuple) and its `ids` too; where they are computed (ids from a
generator over files) only the parametrize decorator is required.
"""
import ast
import os


def _literal(node, constants):
    """The value of a literal expression, reading module-level names bound to
    literals; raises ValueError when it is computed."""
    if isinstance(node, ast.Name) and node.id in constants:
        return _literal(constants[node.id], constants)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("sorted", "list", "tuple") and len(node.args) == 1
            and not node.keywords):
        return {"sorted": sorted, "list": list, "tuple": tuple}[node.func.id](
            _literal(node.args[0], constants))
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_literal(e, constants) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_literal(k, constants): _literal(v, constants)
                for k, v in zip(node.keys, node.values)}
    return ast.literal_eval(node)


def _id(value, argname, index):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return str(value)
    return f"{argname}{index}"  # pytest's id for a value it does not print


def _parametrize_ids(decorator, constants):
    """The ids one @pytest.mark.parametrize makes, or None when computed."""
    try:
        names = _literal(decorator.args[0], constants)
        values = list(_literal(decorator.args[1], constants))
        keywords = {k.arg: k.value for k in decorator.keywords}
        if "ids" in keywords:
            return [str(i) for i in _literal(keywords["ids"], constants)]
    except (ValueError, TypeError, IndexError, SyntaxError):
        return None
    names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
    if len(names) == 1:
        return [_id(v, names[0], i) for i, v in enumerate(values)]
    return ["-".join(_id(v, n, i) for v, n in zip(row, names)) for i, row in enumerate(values)]


def _is_parametrize(decorator):
    return (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
            and decorator.func.attr == "parametrize")


def _defined(body):
    """{name: node} of the functions and classes a module or class body
    defines, and the names it binds otherwise (assignments, imports)."""
    found = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, ast.Assign):
            found.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update({(a.asname or a.name).split(".")[0]: node for a in node.names})
    return found


def problem(test_id, root, _parsed={}):
    """None when `test_id` names an existing test under `root`, else why not."""
    path, *parts = test_id.split("::")
    full = os.path.join(root, path)
    if not os.path.isfile(full):
        return f"{path}: no such test file"
    key = (full, os.path.getmtime(full))
    if key not in _parsed:
        with open(full, encoding="utf-8") as f:
            _parsed[key] = ast.parse(f.read(), full)
    tree = _parsed[key]
    constants = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                 for t in node.targets if isinstance(t, ast.Name)}
    param = None
    if parts and "[" in parts[-1] and parts[-1].endswith("]"):
        parts[-1], param = parts[-1][:-1].split("[", 1)
    body, node, decorators = tree.body, None, []
    for part in parts:
        node = _defined(body).get(part)
        if node is None:
            return f"{test_id}: {part} is not defined in {path}"
        decorators += getattr(node, "decorator_list", [])
        body = getattr(node, "body", [])
    if param is None:
        return None
    marks = [d for d in decorators if _is_parametrize(d)]
    if not marks:
        return f"{test_id}: {parts[-1]} is not parametrized"
    if len(marks) == 1:
        ids = _parametrize_ids(marks[0], constants)
        if ids is not None and param not in ids:
            return f"{test_id}: no parametrization [{param}] (ids: {', '.join(ids)})"
    return None
