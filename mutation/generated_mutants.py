"""Generated mutants of the guard modules, beside mutations.py's
hand-written list: cosmic-ray (`pip install -e .[mutation]`) makes every small
change its operators know (a comparison flipped or moved by one, a number
changed, a `not` added or dropped, `and` for `or`, ...) to one module, and runs
that module's feature tests on each mutant in a fresh process (TensorFlow is
imported per mutant, never forked after import).

    python mutation/generated_mutants.py --list
    python mutation/generated_mutants.py --module cluster_checks [--cap 840] [--rev HEAD]

Each module is named by its dotted name or a suffix of it ("cluster_checks",
"state.run_record"), found in the copied tree as mutations.py's Module()
places are (locate.py), so a module moved to another folder is still found.
Each run works in a scratch copy (mutations.py's copy_repo: the working
tree, or the committed tree at --rev), stops after --cap seconds (what is not
run is reported as such), and prints the score (killed / run) and every
surviving mutant with its line and diff. Survivors are either holes in the
tests (kill them with a test) or harmless (equivalent mutants): the docs'
"Testing" section lists those with why. Not part of the suite: one module
takes minutes (about 8 s per mutant on 2 cores, most of it TensorFlow's import).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import locate  # noqa: E402
import mutations  # noqa: E402  (copy_repo, environment)

# The guard modules and the feature tests that prove their claims: small
# enough that every mutant runs within the cap on 2 cores (the launcher, ~200
# mutants at ~13 s, and exchange_checks, ~280, need a bigger --cap).
WATCHDOG_TESTS = "tests/callbacks/test_step_watchdog.py::"
WATCHDOG_EARLIER = [WATCHDOG_TESTS + name for name in (
    "test_a_blocked_step_ends_the_process_naming_step_and_phase_with_the_checkpoint_kept",
    "test_the_line_names_the_phase_the_step_function_hung_in",
    "test_the_automatic_limit_is_ten_times_the_slowest_step_after_warm_up_at_least_300",
    "test_a_negative_step_timeout_is_refused")]
GPU_SHARE_TESTS = "tests/cluster/test_gpu_share.py::"
AGREEMENT_ERRORS_ROW = (
    "tests/commands/test_newcomer_errors.py::"
    "test_the_errors_page_says_what_the_code_says[workers on different train_dirs]")
MODULES = {
    "cluster_checks": dict(
        module="cluster_checks",
        tests=["tests/config/test_refusal_table.py", "-k",
               "worker or task or slurm or cluster or sync or collective or refusals_only"]),
    "native_precision": dict(
        module="native_precision",
        tests=["tests/recipe/test_gpu_capability.py", "tests/recipe/test_native_precision.py",
               "-k", "not cli"]),
    # The state a resume compares, the train_dir lock, the run's length and
    # the refusals of its batch, the header lines the plan decides, and
    # checkpoint saving (the slower selections: ~150 mutants each, some of
    # whose tests train and resume; a --cap of hours on 2 cores).
    "run_record": dict(
        module="run_record",
        tests=["tests/state/test_run_record.py", "tests/state/test_record_fields.py",
               "tests/state/test_refusal_operands.py", "tests/state/test_state_leftovers.py",
               "tests/state/test_user_model_record.py", "tests/state/test_resume_input.py",
               "tests/state/test_resume_settings.py", "tests/state/test_eval_input_recorded.py",
               "tests/state/test_run_record_values.py",
               "-k", "not another_optimizer"]),
    "train_dir_lock": dict(
        module="train_dir_lock",
        tests=["tests/state/test_train_dir_lock.py", "tests/state/test_state_leftovers.py"]),
    "steps": dict(
        module="steps",
        tests=["tests/plan/test_plan.py", "tests/plan/test_synthetic_epochs.py",
               "tests/plan/test_multiworker_numbers.py",
               "tests/input/test_batch_larger_than_epoch.py",
               "tests/state/test_refusal_operands.py", "tests/engine/test_staging_warmup.py"]),
    "describe": dict(
        module="describe",
        tests=["tests/plan/test_plan.py", "tests/plan/test_synthetic_epochs.py",
               "tests/plan/test_multiworker_numbers.py"]),
    "checkpointing": dict(
        module="checkpointing",
        # The quick tests first: with -x a mutant is killed by the first failure.
        tests=["tests/callbacks/test_checkpoint_saver.py",
               "tests/state/test_checkpoint_files.py", "tests/state/test_train_dir_remains.py",
               "tests/state/test_checkpoint_estimate.py", "tests/callbacks/test_divergence.py",
               "tests/state/test_resume_exact.py", "tests/state/test_full_disk.py"]),
    # The step watchdog, its callback, the exchange's common path, the GPU
    # share and the resume agreement. "earlier": the tests that predate the
    # round that wrote tests for these modules (ca5339b); they run first, so
    # the first failure of a mutant (-x) says whether those tests alone kill
    # it: one run scores the module before and after that round.
    "watchdog": dict(
        module="engine.run.watchdog",
        tests=["tests/callbacks/test_step_watchdog.py",
               "tests/callbacks/test_hung_exchange_marks.py"],
        earlier=WATCHDOG_EARLIER),
    "step_watchdog": dict(
        module="callbacks.step_watchdog",
        tests=["tests/callbacks/test_step_watchdog.py"],
        earlier=WATCHDOG_EARLIER),
    "flow": dict(
        module="engine.exchange.flow",
        tests=["tests/engine/test_finite_check.py", "tests/engine/test_exchange_riders.py"],
        earlier=["tests/engine/test_finite_check.py"]),
    "gpu_share": dict(
        module="config.gpu_share",
        tests=["tests/cluster/test_gpu_share.py"],
        earlier=[GPU_SHARE_TESTS + name for name in (
            "test_two_launched_workers_with_2_gpus_each_of_4_get_disjoint_gpus",
            "test_workers_that_would_share_a_gpu_are_refused_before_any_starts",
            "test_without_device_flag_the_driver_s_gpus_are_shared_out",
            "test_slurm_tasks_of_one_node_get_their_share_of_its_gpus_list",
            "test_a_worker_beside_others_that_sees_every_gpu_is_refused")]),
    "resume_agreement": dict(
        module="state.resume.agreement",
        tests=[AGREEMENT_ERRORS_ROW, "tests/state/test_resume_agreement.py"],
        earlier=[AGREEMENT_ERRORS_ROW]),
}

# Operators whose mutants are never a realistic bug in these modules: shift,
# bitwise and power operators in place of + and - inside messages' numbers.
EXCLUDED_OPERATORS = [r"core/ReplaceBinaryOperator_.*_(LShift|RShift|BitAnd|BitOr|BitXor|Pow)"]


def _selection(module, repo):
    """The module's test selection, less the test files the copied tree does
    not hold (a --rev from before they were written: the "before" run)."""
    kept = [part for part in module["tests"]
            if not part.startswith("tests/") or _test_exists(repo, part)]
    left_out = [part for part in module["tests"] if part not in kept]
    if left_out:
        print(f"not in this tree, left out: {' '.join(left_out)}", flush=True)
    return kept


def _test_exists(repo, part):
    """A test file of the tree at `repo`, or a test (file::name[param]) defined in one."""
    path, _, name = part.partition("::")
    if not os.path.exists(os.path.join(repo, path)):
        return False
    if not name:
        return True
    with open(os.path.join(repo, path)) as f:
        return re.search(rf"^def {re.escape(name.split('[')[0])}\(", f.read(), re.M) is not None


def _config(module, path, timeout, repo):
    tests = " ".join(shlex.quote(part) for part in _selection(module, repo))
    excluded = ", ".join(json.dumps(pattern) for pattern in EXCLUDED_OPERATORS)
    return (f'[cosmic-ray]\nmodule-path = "{path}"\ntimeout = {timeout}\n'
            f"excluded-modules = []\n"
            f'test-command = "{sys.executable} -m pytest -x -q -p no:cacheprovider {tests}"\n'
            f'\n[cosmic-ray.distributor]\nname = "local"\n'
            f"\n[cosmic-ray.filters.operators-filter]\nexclude-operators = [{excluded}]\n")


def _results(scratch, session):
    done = subprocess.run(["cosmic-ray", "dump", session], cwd=scratch, capture_output=True,
                          text=True, check=True)
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def _check_earlier_first(module, repo, env):
    """The earlier tests run first (pytest orders a file's tests as written):
    else a mutant's first failure would not say whether they kill it."""
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         *_selection(module, repo)], cwd=repo, env=env, capture_output=True, text=True)
    nodes = [line for line in collected.stdout.splitlines() if "::" in line]
    flags = [is_earlier(node, module["earlier"]) for node in nodes]
    if not any(flags) or flags != sorted(flags, reverse=True):
        sys.exit(f"the earlier tests {module['earlier']} do not all run first: {nodes}")


def _survivors_pending(kept, session):
    """A copy of a kept run's session whose survivors are to run again (the
    mutants it killed keep their results)."""
    shutil.copy(kept, session)
    with sqlite3.connect(session) as db:
        db.execute("DELETE FROM work_results WHERE lower(test_outcome) = 'survived'")


def run_module(name, cap, rev, per_mutant_timeout, keep, again=None):
    module = MODULES[name]
    scratch = tempfile.mkdtemp(prefix=f"towertrain_cr_{name}_")
    try:
        mutations.copy_repo(os.path.join(scratch, "repo"), rev)
        repo = os.path.join(scratch, "repo")
        path = module_path(module, repo)
        env = dict(mutations.environment(repo), PYTHONPATH=os.pathsep.join(
            [repo, os.path.join(repo, "tests")]))
        with open(os.path.join(scratch, "config.toml"), "w") as f:
            f.write(_config(module, path, per_mutant_timeout, repo))
        config, session = os.path.join(scratch, "config.toml"), os.path.join(scratch, "s.sqlite")

        def cosmic(*args, timeout=None):
            return subprocess.run(["cosmic-ray", *args], cwd=repo, env=env, timeout=timeout,
                                  capture_output=True, text=True)
        if again:
            _survivors_pending(os.path.join(again, "s.sqlite"), session)
        else:
            done = cosmic("init", config, session)
            if done.returncode:
                sys.exit(f"cosmic-ray init failed:\n{done.stderr[-2000:]}")
            subprocess.run(["cr-filter-operators", session, config], cwd=repo, env=env,
                           check=True, capture_output=True)
        started = time.monotonic()
        if module.get("earlier"):
            _check_earlier_first(module, repo, env)
        baseline = cosmic("baseline", config, timeout=per_mutant_timeout * 2)
        if baseline.returncode:
            sys.exit(f"{name}: the tests fail on the unmutated copy:\n"
                     f"{(baseline.stdout + baseline.stderr)[-3000:]}")
        left = cap - (time.monotonic() - started)
        worker = subprocess.Popen(["cosmic-ray", "exec", config, session], cwd=repo, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        try:
            worker.wait(timeout=max(left, 1))
        except subprocess.TimeoutExpired:  # the cap: what ran is in cosmic-ray's session file
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        results = _results(repo, session)
        report(name, path, results, time.monotonic() - started)
        if module.get("earlier"):
            report_earlier(name, module["earlier"], results)
    finally:
        if keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def module_path(module, repo):
    """The file of the module's dotted name (or suffix) in the tree at `repo`."""
    try:
        return locate.Index(repo).module_path(module["module"])
    except locate.Unresolved as problem:
        sys.exit(f"{problem}: update MODULES")


def report(name, path, results, seconds):
    counts = {"killed": 0, "survived": 0, "incompetent": 0, "not run": 0, "skipped": 0,
              "timeout": 0}
    survivors = []
    for item, result in results:
        if result is None:
            counts["not run"] += 1
            continue
        if result.get("worker_outcome") == "skipped":
            counts["skipped"] += 1
            continue
        outcome = result.get("test_outcome") or "incompetent"
        counts[outcome] = counts.get(outcome, 0) + 1
        # cosmic-ray scores a test run past --timeout as killed; said apart,
        # since a mutant that hangs the tests is caught only by the limit.
        if outcome == "killed" and result.get("output") == "timeout":
            counts["timeout"] += 1
        if outcome == "survived":
            survivors.append((item, result))
    scored = counts["killed"] + counts["survived"]
    score = f"{100.0 * counts['killed'] / scored:.0f}%" if scored else "n/a"
    print(f"{name} ({path}): {len(results)} mutants, killed {counts['killed']} "
          f"({counts['timeout']} of them by --timeout), "
          f"survived {counts['survived']}, incompetent {counts['incompetent']}, filtered "
          f"{counts['skipped']}, not run {counts['not run']}; score {score} of those run "
          f"({seconds / 60:.1f} min)")
    for item, result in survivors:
        mutation = item["mutations"][0]
        line = mutation["start_pos"][0]
        print(f"\nSURVIVED {mutation['module_path']}:{line} {mutation['operator_name']} "
              f"#{mutation['occurrence']}")
        print(result.get("diff", "").rstrip())


def first_failure(output):
    """The node id of the first test pytest -x reports failed (or errored)."""
    found = re.search(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", output or "", re.M)
    return found.group(1) if found else None


def is_earlier(node, earlier):
    """Whether the test `node` is one of `earlier` (node ids or test files)."""
    return any(node == test or node.startswith(test + ("::" if "::" not in test else "["))
               for test in earlier)


def report_earlier(name, earlier, results):
    """The score of the earlier tests alone: a mutant they kill fails one of
    them, which run first; one they miss fails a later test or none. A mutant
    that ran past --timeout, or broke a later test's collection, is not
    decided here: run it with the earlier tests alone."""
    counts = {"killed": 0, "survived": 0, "undecided": 0}
    undecided = []
    for item, result in results:
        if result is None or result.get("worker_outcome") == "skipped":
            continue
        outcome = result.get("test_outcome") or "incompetent"
        if outcome == "incompetent":
            continue
        if outcome == "survived":
            counts["survived"] += 1
            continue
        node = first_failure(result.get("output"))
        if node is None:
            counts["undecided"] += 1
            undecided.append(item)
        elif is_earlier(node, earlier):
            counts["killed"] += 1
        else:
            counts["survived"] += 1
    print(f"\n{name} with the earlier tests alone ({' '.join(earlier)}): killed "
          f"{counts['killed']}, survived {counts['survived']}, undecided {counts['undecided']}")
    for item in undecided:
        mutation = item["mutations"][0]
        print(f"UNDECIDED {mutation['module_path']}:{mutation['start_pos'][0]} "
              f"{mutation['operator_name']} #{mutation['occurrence']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", choices=sorted(MODULES),
                        help="a guard module to mutate (repeatable; default: all)")
    parser.add_argument("--cap", type=float, default=840,
                        help="seconds per module, baseline included (default 840: 14 min)")
    parser.add_argument("--timeout", type=float, default=180,
                        help="seconds per mutant's test run (a hang counts as killed)")
    parser.add_argument("--rev", help="mutate the committed tree at this revision")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directories")
    parser.add_argument("--list", action="store_true", help="list the modules and exit")
    parser.add_argument("--again", metavar="KEPT_DIR",
                        help="run only the survivors of a --keep run (its scratch directory, "
                             "one --module) again, against this tree: after new tests")
    args = parser.parse_args()
    if args.list:
        for name, module in MODULES.items():
            print(f"{name}: {module_path(module, mutations.ROOT)} <- "
                  f"{' '.join(module['tests'])}")
        return
    if shutil.which("cosmic-ray") is None:
        sys.exit("cosmic-ray is not installed: pip install -e .[mutation]")
    if args.again and len(args.module or ()) != 1:
        sys.exit("--again: name the one --module the kept run mutated")
    for name in args.module or list(MODULES):
        run_module(name, args.cap, args.rev, args.timeout, args.keep, args.again)


if __name__ == "__main__":
    main()
