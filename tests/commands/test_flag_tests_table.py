"""docs/flag_tests.md names, for every flag of the settings table, the test that
proves the flag's value reaches the code that uses it. A flag without a row
fails here, with the exact line to add."""
import os
import re

from towertrain.config import settings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "docs", "flag_tests.md")
ROW = re.compile(r"^\| `--(\w+)` \| `(tests/[\w/]+\.py)::(test_\w+)` \| (.+) \|$")


def rows():
    with open(TABLE, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.startswith("| `--")]
    parsed = [ROW.match(line) for line in lines]
    bad = [line for line, match in zip(lines, parsed) if match is None]
    assert not bad, f"docs/flag_tests.md: malformed rows {bad}"
    return [match.groups() for match in parsed]


def test_every_flag_has_a_row():
    have = [name for name, _, _, _ in rows()]
    missing = [s.name for s in settings.SETTINGS if s.name not in have]
    assert not missing, (
        "docs/flag_tests.md has no row for " + ", ".join(f"--{n}" for n in missing)
        + ". Add one line per flag to its table, e.g.\n"
        + "\n".join(f"| `--{n}` | `tests/<wing>/test_<file>.py::test_<name>` | <what a "
                    "non-default value changes there> |" for n in missing)
        + "\nnaming a test that sets the flag to a non-default value and checks the "
        "effect the docs document (write one if none does).")
    doubled = sorted({n for n in have if have.count(n) > 1})
    assert not doubled, f"docs/flag_tests.md: more than one row for {doubled}"
    unknown = sorted(set(have) - {s.name for s in settings.SETTINGS})
    assert not unknown, f"docs/flag_tests.md: rows for flags that no longer exist: {unknown}"


def test_every_row_names_a_test_that_exists_and_sets_its_flag():
    problems = []
    for name, path, test, _ in rows():
        full = os.path.join(ROOT, path)
        if not os.path.isfile(full):
            problems.append(f"--{name}: {path} does not exist")
            continue
        with open(full, encoding="utf-8") as f:
            source = f.read()
        if not re.search(rf"^def {test}\(", source, re.M):
            problems.append(f"--{name}: {path} has no {test}")
        if not re.search(rf"\b{name}\b", source):
            problems.append(f"--{name}: {path} never mentions {name}")
    assert not problems, "docs/flag_tests.md:\n" + "\n".join(problems)
