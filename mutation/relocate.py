"""Re-place the breakages whose place no longer resolves, after code moved.

    python mutation/relocate.py            # rewrite their places in mutation_list.py
    python mutation/relocate.py --dry-run  # only say what it would do

A definition renamed, or its code moved into another one, breaks the entries
that name it. Where such an entry's old text now occurs once in the whole
product (re-indented or not), its place is rewritten to the definition that
holds the text now (locate.place_of), in mutation_list.py's own source, so
its comments and layout stay. A test file that was moved or renamed (git's
rename record, else the one file of that name under tests/) is rewritten
wherever the list names it. The others are listed: their old text changed
or is in several places, or a test was renamed, and a person decides what
the breakage now breaks (or drops it when its code is gone). Run
mutations.py --check afterwards.
"""
import argparse
import ast
import glob
import os
import re
import subprocess
import sys

import locate
from mutation_list import MUTATIONS

LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mutation_list.py")


def found_once(old, index):
    """(path, start, end) of `old`'s one occurrence in the whole product, exact
    or else re-indented; None when it is nowhere or in several places."""
    exact = [(path, start) for path, text in index.sources.items()
             for start in _starts(text, old)]
    if exact:
        return (exact[0][0], exact[0][1], exact[0][1] + len(old)) if len(exact) == 1 else None
    shifted = []
    for path, text in index.sources.items():
        try:
            start, text_found, _ = locate.find_text(text, old, old, path)
        except locate.Unresolved:
            continue
        shifted.append((path, start, start + len(text_found)))
    return shifted[0] if len(shifted) == 1 else None


def _starts(text, old):
    start = text.find(old)
    while start >= 0:
        yield start
        start = text.find(old, start + 1)


def new_places(mutations, index):
    """({entry name: new place}, [why each other broken entry is left])."""
    moved, left = {}, []
    for mutation in mutations:
        try:
            locate.resolve(mutation.place, mutation.old, mutation.new, index)
            continue
        except locate.Unresolved as problem:
            why = str(problem)
        where = None if isinstance(mutation.place, locate.File) else found_once(
            mutation.old, index)
        if where is None:
            left.append(f"{mutation.name}: {why}")
            continue
        place = locate.place_of(*where, index)
        locate.resolve(place, mutation.old, mutation.new, index)  # the new place holds it
        moved[mutation.name] = place
    return moved, left


def test_file_moves(mutations, root):
    """{missing test file: where it is now}, for the files the entries name
    that are gone: followed through git's renames, else found by basename."""
    named = {t.split("::")[0] for m in mutations for t in m.tests}
    missing = sorted(p for p in named if not os.path.exists(os.path.join(root, p)))
    if not missing:
        return {}
    renames = {}
    log = subprocess.run(["git", "-C", root, "log", "-M", "--diff-filter=R", "--name-status",
                          "--format=", "--", "tests"], capture_output=True, text=True)
    for line in reversed(log.stdout.splitlines()):  # oldest first: chains end newest
        status, old, new = (line.split("\t") + ["", ""])[:3]
        if status.startswith("R"):
            renames[old] = new
    moves = {}
    for path in missing:
        now = path
        while now in renames and now != renames[now]:
            now = renames[now]
        if not os.path.exists(os.path.join(root, now)):
            same_name = glob.glob(os.path.join(root, "tests", "**", os.path.basename(path)),
                                  recursive=True)
            now = os.path.relpath(same_name[0], root) if len(same_name) == 1 else None
        if now:
            moves[path] = now.replace(os.sep, "/")
    return moves


def rewrite_test_files(source, moves):
    """The list's source with each moved test file's path replaced: written in
    full ("tests/a/test_x.py") or after the T prefix ("a/test_x.py")."""
    for old, new in moves.items():
        tail_old, tail_new = old[len("tests/"):], new[len("tests/"):]
        source = re.sub(r'(?<=["/])' + re.escape(tail_old) + r'(?=["\[:])', tail_new, source)
    return source


def rewrite(source, moved):
    """mutation_list.py's source with the place argument of each entry in
    `moved` replaced."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(lineno, col):  # ast columns count UTF-8 bytes
        return starts[lineno - 1] + len(lines[lineno - 1].encode()[:col].decode())

    edits = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Mutation"
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in moved):
            place = node.args[1]
            edits.append((offset(place.lineno, place.col_offset),
                          offset(place.end_lineno, place.end_col_offset),
                          repr(moved[node.args[0].value])))
    for start, end, text in sorted(edits, reverse=True):
        source = source[:start] + text + source[end:]
    return source


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="change nothing")
    parser.add_argument("--root", default=locate.ROOT,
                        help="the tree to place the entries in (default: this checkout)")
    args = parser.parse_args()
    moved, left = new_places(MUTATIONS, locate.Index(args.root))
    for name, place in moved.items():
        print(f"{name}: {place!r}")
    moves = test_file_moves(MUTATIONS, args.root)
    for old, new in moves.items():
        print(f"{old} -> {new}")
    if (moved or moves) and not args.dry_run:
        with open(LIST, encoding="utf-8") as f:
            source = f.read()
        with open(LIST, "w", encoding="utf-8") as f:
            f.write(rewrite_test_files(rewrite(source, moved), moves))
    if left:
        print(f"\nleft to fix by hand ({len(left)}):", *left, sep="\n")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
