"""The user's surface of towertrain, as text that can be compared before and
after a move of code: the generated flag reference, `--helpfull`, the public
Params fields, the tf_cnn_benchmarks flag table and every refusal message.

    python tests/helpers/surface.py DIR

writes one file per part into DIR (tests/config/surface_before/ holds the copy
taken before settings moved beside their readers). Each part is normalised so
that order is free where grouping decides it: a flag's block (or table row) is
kept with the heading it sits under, and the blocks are sorted.
"""
import ast
import json
import os
import re
import subprocess
import sys
import typing

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRODUCT = ("towertrain", "models", "input_pipeline")
PARTS = ("flag_reference.txt", "helpfull.txt", "params.json", "tfcnn_flags.json",
         "refusals.txt")


def _run(code_or_args):
    args = ([sys.executable, "-c", code_or_args] if isinstance(code_or_args, str)
            else [sys.executable] + code_or_args)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (ROOT, os.environ.get("PYTHONPATH")) if p), COLUMNS="80")
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def flag_reference():
    """docs/flags.md as the generator makes it: each row under its heading, sorted."""
    text = _run(["-m", "towertrain.commands.flag_reference"])
    heading, rows = "", []
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line
        elif line.startswith("| `--"):
            rows.append(f"{heading}\t{line}")
        elif line.strip() and not line.startswith("|"):
            if "It also reads these flags" in line:  # a list whose order follows the groups
                lead, names = line.split(": ", 1)
                line = lead + ": " + ", ".join(sorted(names.rstrip(".").split(", "))) + "."
            rows.append(f"{heading}\t{line}")
    return "\n".join(sorted(rows)) + "\n"


def helpfull():
    """`python -m towertrain --helpfull`: each flag's block under its heading, sorted."""
    text = _run(["-m", "towertrain", "--helpfull"])
    text = text.replace(sys.executable, "PYTHON")
    heading, blocks, block = "", [], None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            heading, block = line, None
            blocks.append([heading])
        elif re.match(r"^  (-\S,)?--", line):
            block = [heading, line]
            blocks.append(block)
        elif block is not None:
            block.append(line)
        elif line.strip():
            blocks[-1].append(line)
    return "\n".join(sorted("\n".join(b).rstrip() for b in blocks)) + "\n"


def params_fields():
    """Every public Params field: name, type, default and its flag's help."""
    code = (
        "import json, typing; from towertrain.config import flags, params;"
        "flags.define_flags();"
        "hints = typing.get_type_hints(params.Params);"
        "print(json.dumps([dict(name=f.name, type=repr(hints[f.name]), default=repr(f.default),"
        " help=flags.FLAGS[f.name].help if f.name in flags.FLAGS else None)"
        " for f in params.dataclasses.fields(params.Params)], indent=1))")
    fields = json.loads(_run(code))
    return json.dumps(sorted(fields, key=lambda f: f["name"]), indent=1) + "\n"


def tfcnn_table():
    """tf_cnn_benchmarks' flags and what towertrain does with each, by name."""
    code = ("import json; from towertrain.config import tfcnn_flags as t;"
            "print(json.dumps([list(f) for f in t.FLAGS]))")
    rows = json.loads(_run(code))
    return json.dumps(sorted(rows, key=lambda r: r[0]), indent=1) + "\n"


# Refusal messages, read off the source: the text of every `raise
# ParamsError(...)` and the message of every call of a function named
# fail/_fail (fail(flag, value, message): the message, which follows the flag
# named in the first), wherever that code lives. An f-string's expressions
# become {…}; a non-literal argument {…}. Compared as a set: a check written
# once for many flags (or split in two) says the same words.

def _text(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{…}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    if isinstance(node, ast.IfExp):
        return f"({_text(node.body)} / {_text(node.orelse)})"
    return "{…}"


def _callee(node):
    func = node.func
    return func.id if isinstance(func, ast.Name) else (
        func.attr if isinstance(func, ast.Attribute) else "")


def message_templates(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = []
    for node in ast.walk(tree):
        call = None
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and \
                _callee(node.exc) == "ParamsError":
            call = node.exc
        elif isinstance(node, ast.Call) and _callee(node) in ("fail", "_fail"):
            call = node
        if call is not None and call.args:
            message = call.args[2:] if _callee(call) != "ParamsError" else call.args
            found.append(" | ".join(_text(a) for a in message or call.args))
    return found


def refusals(root=ROOT):
    """Every refusal template of the product, one a line, sorted, each once."""
    found = []
    for folder in PRODUCT:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in files:
                if name.endswith(".py"):
                    found += message_templates(os.path.join(dirpath, name))
    return "\n".join(sorted({t.replace("\n", "\\n") for t in found})) + "\n"


MAKERS = {"flag_reference.txt": flag_reference, "helpfull.txt": helpfull,
          "params.json": params_fields, "tfcnn_flags.json": tfcnn_table,
          "refusals.txt": refusals}


def write(folder):
    os.makedirs(folder, exist_ok=True)
    for name, make in MAKERS.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(make())


if __name__ == "__main__":
    write(sys.argv[1])
