"""Reading the code blocks of README.md and docs/*.md (for the docs tests)."""
import glob
import os
import re
import shlex

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMMAND_START = re.compile(
    r"^(\w+=\S*\s+)*(python3?|pip3?|towertrain|bazel|\.ci/run|mkdocs|curl|tar|apt-get|srun)\b")


# Fenced-block languages this file knows what to do with.
HANDLED_LANGUAGES = {"python"}


def fenced_blocks(path):
    """[(language, body)] of every ``` block in a Markdown file."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^```([^\n`]*)\n(.*?)^```", text, re.S | re.M)


def python_blocks(path):
    return [body for language, body in fenced_blocks(path) if language.strip() == "python"]


def indented_blocks(path):
    """[(first line number, [lines])] of every indented code block (4 spaces,
    after a blank line, outside fenced blocks and list items)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, current, fenced, previous = [], None, False, ""
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("    ") and (current is not None or (
                not previous.strip() and not _in_list(lines, number))):
            if current is None:
                current = (number, [])
                blocks.append(current)
            current[1].append(line[4:])
        elif current is not None and not line.strip():
            continue  # a blank line inside a block
        else:
            current = None
        previous = line
    return [(number, _strip_trailing_blank(body)) for number, body in blocks]


def _in_list(lines, number):
    """Whether line `number` continues a list item (then indentation is not code)."""
    for line in reversed(lines[:number - 1]):
        if not line.strip():
            continue
        return bool(re.match(r"\s*([-*+]|\d+\.)\s", line)) or line.startswith("  ")
    return False


def _strip_trailing_blank(body):
    while body and not body[-1].strip():
        body.pop()
    return body


def documents():
    return [os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "*.md")))


def sample_outputs():
    """[(doc, line, [lines])] of the indented blocks that show what the first
    training command prints (they start with the header's `TensorFlow:` line)."""
    return [(os.path.relpath(doc, ROOT), number, body) for doc in documents()
            for number, body in indented_blocks(doc)
            if body and body[0].startswith("TensorFlow:")]


def logical_lines(body):
    """Shell lines with backslash continuations joined; blank lines dropped."""
    joined, pending = [], ""
    for line in body:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    if pending:
        joined.append(pending)
    return [line.strip() for line in joined if line.strip()]


def shell_blocks():
    """[(doc, line, [commands])] of the indented blocks that hold commands; each
    command is a word list (env assignments, `&&` chains split). Indented
    blocks with no command line are sample output."""
    found = []
    for doc in documents():
        for number, body in indented_blocks(doc):
            lines = logical_lines(body)
            if not any(COMMAND_START.match(line) for line in lines):
                continue
            commands = []
            for line in lines:
                if line.startswith("#"):
                    continue
                for part in line.split("&&"):
                    commands.append(shlex.split(part, comments=True))
            found.append((os.path.relpath(doc, ROOT), number, commands))
    return found
