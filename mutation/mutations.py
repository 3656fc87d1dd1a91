"""Break a documented claim in a scratch copy; the tests that prove it must fail.

    python mutation/mutations.py            # every breakage (399; at 260 the run took 48 min on a 2-core Zen 4)
    python mutation/mutations.py --list     # names, places, files and tests
    python mutation/mutations.py --only NAME [--only NAME2 ...]
    python mutation/mutations.py --sample 30   # 30 spread over the wings (--seed picks another)
    python mutation/mutations.py --check    # every entry resolves, its tests exist (no run)
    python mutation/mutations.py --where FILE 'old text'   # the place a new entry names
    python mutation/mutations.py --selfcheck   # proves the scratch code is what runs

Each breakage is a small text patch: (place, old text, new text, tests),
the place being the function, method, class or module-level name that holds
the old text, found by parsing the product (locate.py), not a file path. For
each one the script copies the repository to a fresh scratch directory,
applies the patch there, runs the named tests in that copy and reports

    CAUGHT   the tests failed (the failing test ids are listed),
    MISSED   the tests passed: the claim is not proven, write a test,
    BROKEN   the place or the old text is not found exactly once: the code was
             renamed or changed; update the entry so it breaks the same claim.

A baseline run of every named test on the unpatched copy comes first (skip it
with --no-baseline): a test that already fails there cannot tell anything and
is reported as such.

How the scratch copy is imported. towertrain is installed editable from the
real checkout, with setup.py's package_dir mapping models/ -> towertrain.models
and input_pipeline/ -> towertrain.input_pipeline; that mapping lives in an
import hook appended to sys.meta_path, so it is consulted only after Python's
normal path search has failed. In the scratch copy the script adds two
symlinks, towertrain/models -> ../models and towertrain/input_pipeline ->
../input_pipeline, and runs pytest with PYTHONPATH=<scratch> (cwd = scratch,
so subprocesses started by the tests, e.g. `python -m towertrain`, inherit
it). The normal search then finds <scratch>/towertrain first and the
subpackages through its __path__, and the editable hook is never asked.
`--selfcheck` verifies this: it prints where towertrain, towertrain.models
and towertrain.input_pipeline import from in a scratch copy (all must be
under it) and applies a patch that makes each of them raise on import, which
must fail.

It need not run in CI. The breakages live in mutation/mutation_list.py: add an
entry there whenever a documented claim gets a test.
"""
import argparse
import collections
import fnmatch
import glob
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_IGNORE_NAMES = shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", ".pytest_cache",
                                      ".benchmarks", "build", "dist")


def IGNORE(directory, names):
    """What a scratch copy leaves out: caches, builds and runs' train_dir*
    folders (not files: towertrain/state/train_dir_lock.py is code)."""
    runs = {name for name in fnmatch.filter(names, "train_dir*")
            if os.path.isdir(os.path.join(directory, name))}
    return set(_IGNORE_NAMES(directory, names)) | runs

import locate  # noqa: E402 - mutation/ is the script's dir
import named_tests  # noqa: E402
from mutation_list import MUTATIONS  # noqa: E402



def copy_repo(dest, rev=None, overlay=()):
    """The working tree (rev=None) or the committed tree at `rev`, plus the
    working-tree files matching `overlay` globs (e.g. new, uncommitted tests)."""
    if rev is None:
        shutil.copytree(ROOT, dest, ignore=IGNORE, symlinks=True)
    else:
        os.makedirs(dest)
        archive = subprocess.run(["git", "-C", ROOT, "archive", rev], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    for pattern in overlay:
        for path in glob.glob(os.path.join(ROOT, pattern)):
            target = os.path.join(dest, os.path.relpath(path, ROOT))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(path, target)
    # See the module docstring: make the scratch tree importable as installed.
    for sub in ("models", "input_pipeline"):
        link = os.path.join(dest, "towertrain", sub)
        if os.path.lexists(link):
            raise RuntimeError(f"{link} exists; the layout changed, update copy_repo()")
        os.symlink(os.path.join("..", sub), link)


def environment(scratch):
    env = dict(os.environ)
    env["PYTHONPATH"] = scratch + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                   else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return env


def apply(scratch, mutation):
    """Patches the scratch copy; returns None, or why the patch cannot apply."""
    try:
        locate.apply(locate.resolve(mutation.place, mutation.old, mutation.new, root=scratch),
                     scratch)
    except locate.Unresolved as problem:
        return str(problem)
    return None


def check(mutations, root=ROOT):
    """Why each entry would not run in the tree at `root`: its place or old
    text not found exactly once, or a test it names missing. [] when none."""
    index = locate.Index(root)
    problems = []
    for mutation in mutations:
        try:
            locate.resolve(mutation.place, mutation.old, mutation.new, index, root)
        except locate.Unresolved as problem:
            problems.append(f"{mutation.name}: {problem}")
        problems += [f"{mutation.name}: {why}" for why in
                     filter(None, (named_tests.problem(t, root) for t in mutation.tests))]
    return problems


FAILED_LINE = re.compile(r"^(FAILED|ERROR) (\S+)")


def run_tests(scratch, tests, timeout):
    """(passed?, failing test ids, seconds, output tail)."""
    command = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider",
               *tests]
    start = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=scratch, env=environment(scratch),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        out = (err.stdout or b"")
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
        return False, ["(timed out)"], time.monotonic() - start, out[-2000:]
    failing = sorted({m.group(2) for line in proc.stdout.splitlines()
                      for m in [FAILED_LINE.match(line)] if m})
    if proc.returncode != 0 and not failing:
        failing = [f"(pytest exit {proc.returncode}, no test ids: collection error?)"]
    return proc.returncode == 0, failing, time.monotonic() - start, proc.stdout[-3000:]


def wing(patch):
    """The part of the project a resolved entry breaks: towertrain's
    subpackage ("engine", "state"; "towertrain" for its top modules),
    "models", "input_pipeline", or "outside the product" (docs, scripts)."""
    parts = patch.path.split("/")
    if parts[0] not in locate.PRODUCT:
        return "outside the product"
    return parts[1] if parts[0] == "towertrain" and len(parts) > 2 else parts[0]


def spread(mutations, count, seed=0):
    """`count` entries taken in turn from each wing (a fixed shuffle within a
    wing), so a sample covers the project rather than the list's first pages.
    Entries that do not resolve are left out (--check names them)."""
    index = locate.Index()
    by_wing = collections.defaultdict(list)
    for mutation in mutations:
        try:
            patch = locate.resolve(mutation.place, mutation.old, mutation.new, index)
        except locate.Unresolved:
            continue
        by_wing[wing(patch)].append(mutation)
    queues = [random.Random(seed).sample(by_wing[w], len(by_wing[w])) for w in sorted(by_wing)]
    taken = []
    while len(taken) < count and any(queues):
        for queue in queues:
            if queue and len(taken) < count:
                taken.append(queue.pop())
    return taken


def selfcheck(workdir, rev=None, overlay=()):
    scratch = os.path.join(workdir, "selfcheck")
    copy_repo(scratch, rev, overlay)
    probe = ("import towertrain, towertrain.models as m, towertrain.input_pipeline as i; "
             "print(towertrain.__file__); print(m.__file__); print(i.__file__)")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=workdir,
                          env=environment(scratch), capture_output=True, text=True)
    paths = proc.stdout.split()
    print("imports from:", *paths, sep="\n  ")
    ok = proc.returncode == 0 and len(paths) == 3 and all(
        os.path.realpath(p).startswith(os.path.realpath(scratch)) for p in paths)
    for package in ("towertrain", "models", "input_pipeline"):
        init = os.path.join(scratch, package, "__init__.py")
        with open(init, encoding="utf-8") as f:
            original = f.read()
        with open(init, "w", encoding="utf-8") as f:
            f.write("raise ImportError('mutation selfcheck')\n" + original)
        proc = subprocess.run([sys.executable, "-c", probe], cwd=workdir,
                              env=environment(scratch), capture_output=True, text=True)
        patched_seen = proc.returncode != 0 and "mutation selfcheck" in proc.stderr
        print(f"patched {package}/__init__.py seen: {patched_seen}")
        ok = ok and patched_seen
        with open(init, "w", encoding="utf-8") as f:
            f.write(original)
    print("selfcheck", "OK" if ok else "FAILED")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the breakages and exit")
    parser.add_argument("--check", action="store_true",
                        help="check that every entry resolves and its tests exist, and exit")
    parser.add_argument("--where", nargs=2, metavar=("FILE", "OLD_TEXT"),
                        help="print the place a new entry for OLD_TEXT in FILE names, and exit")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run only this breakage (repeatable)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the run of every named test on the unpatched copy")
    parser.add_argument("--selfcheck", action="store_true",
                        help="check that the scratch copy is what gets imported")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per pytest run")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directories")
    parser.add_argument("--sample", type=int, metavar="N",
                        help="run N entries spread over the wings (of --only's, if given)")
    parser.add_argument("--seed", type=int, default=0, help="which --sample (default 0)")
    parser.add_argument("--rev", default=None,
                        help="copy the committed tree at this git revision (e.g. HEAD) "
                        "instead of the working tree (useful while others edit it)")
    parser.add_argument("--overlay", action="append", default=[], metavar="GLOB",
                        help="with --rev: also copy these working-tree files (repeatable), "
                        "e.g. --overlay 'tests/test_bite_*.py'")
    args = parser.parse_args()

    names = [m.name for m in MUTATIONS]
    assert len(set(names)) == len(names), "duplicate breakage names"
    if args.where:
        try:
            print(repr(locate.enclosing(*args.where)))
        except locate.Unresolved as problem:
            sys.exit(str(problem))
        return 0
    if args.check:
        problems = check(MUTATIONS)
        print("\n".join(problems) or f"all {len(MUTATIONS)} entries resolve; their tests exist")
        return 1 if problems else 0
    if args.list:
        index = locate.Index()
        for m in MUTATIONS:
            try:
                where = locate.resolve(m.place, m.old, m.new, index).where
            except locate.Unresolved as problem:
                where = f"BROKEN: {problem}"
            print(f"{m.name}\n    {where}\n    tests: {' '.join(m.tests)}")
        return 0
    unknown = set(args.only) - set(names)
    if unknown:
        parser.error(f"unknown breakage(s) {sorted(unknown)}; see --list")
    selected = [m for m in MUTATIONS if not args.only or m.name in args.only]
    if args.sample:
        selected = spread(selected, args.sample, args.seed)

    workdir = tempfile.mkdtemp(prefix="towertrain_mutations_")
    try:
        if args.selfcheck:
            return 0 if selfcheck(workdir, args.rev, args.overlay) else 1
        baseline_failing = set()
        if not args.no_baseline:
            scratch = os.path.join(workdir, "baseline")
            copy_repo(scratch, args.rev, args.overlay)
            tests = sorted({t for m in selected for t in m.tests})
            passed, failing, seconds, tail = run_tests(scratch, tests, args.timeout * 2)
            print(f"baseline: {'pass' if passed else 'FAIL'} ({seconds:.0f} s)", flush=True)
            if not passed:
                print(tail)
                baseline_failing = set(failing)
        results = []
        for i, mutation in enumerate(selected):
            scratch = os.path.join(workdir, f"m{i:02d}_{mutation.name}")
            copy_repo(scratch, args.rev, args.overlay)
            problem = apply(scratch, mutation)
            if problem:
                results.append((mutation.name, "BROKEN", [problem], 0.0))
            else:
                passed, failing, seconds, _ = run_tests(scratch, mutation.tests, args.timeout)
                failing = [f + (" (fails at baseline too)" if f in baseline_failing else "")
                           for f in failing]
                results.append((mutation.name, "MISSED" if passed else "CAUGHT", failing,
                                seconds))
            name, verdict, failing, seconds = results[-1]
            print(f"{verdict:7} {name} ({seconds:.0f} s)", flush=True)
            if not args.keep:
                shutil.rmtree(scratch, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"scratch copies kept in {workdir}")

    width = max(len(r[0]) for r in results)
    print("\n" + "breakage".ljust(width) + "  result  failing tests")
    print("-" * (width + 40))
    for name, verdict, failing, _ in results:
        lines = failing or ["-"]
        print(f"{name.ljust(width)}  {verdict:6}  {lines[0]}")
        for line in lines[1:]:
            print(" " * (width + 10) + line)
    counts = collections.Counter(r[1] for r in results)
    print("\n" + ", ".join(f"{k}: {counts[k]}" for k in ("CAUGHT", "MISSED", "BROKEN")))
    return 0 if counts["CAUGHT"] == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
