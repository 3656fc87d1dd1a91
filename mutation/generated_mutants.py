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
    # share and the resume agreement. The quick tests are named first: with
    # -x a mutant they kill never reaches the slower ones (a blocked run in a
    # subprocess, a traced step held on a phase).
    "watchdog": dict(
        module="engine.run.watchdog",
        tests=[WATCHDOG_TESTS + "test_with_the_default_settings_a_watch_runs_and_reports_a_hung_step",
               WATCHDOG_TESTS + "test_a_step_hung_in_warm_up_is_reported_only_with_an_explicit_limit",
               WATCHDOG_TESTS + "test_what_the_automatic_limit_counts_starts_at_the_first_step_after_warm_up",
               WATCHDOG_TESTS + "test_the_automatic_limit_is_ten_times_the_slowest_step_after_warm_up_at_least_300",
               "tests/callbacks/test_step_watchdog.py"]),
    "step_watchdog": dict(
        module="callbacks.step_watchdog",
        tests=[WATCHDOG_TESTS + "test_with_the_default_settings_a_watch_runs_and_reports_a_hung_step",
               WATCHDOG_TESTS + "test_a_step_hung_in_warm_up_is_reported_only_with_an_explicit_limit",
               WATCHDOG_TESTS + "test_what_the_automatic_limit_counts_starts_at_the_first_step_after_warm_up",
               "tests/callbacks/test_step_watchdog.py"]),
    "flow": dict(
        module="engine.exchange.flow",
        tests=["tests/engine/test_exchange_riders.py", "tests/engine/test_finite_check.py"]),
    "gpu_share": dict(
        module="config.gpu_share",
        tests=["tests/cluster/test_gpu_share.py"]),
    "resume_agreement": dict(
        module="state.resume.agreement",
        tests=["tests/state/test_resume_agreement.py",
               "tests/commands/test_newcomer_errors.py::test_the_errors_page_says_what_the_code_"
               "says[workers on different train_dirs]"]),
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


def run_module(name, cap, rev, per_mutant_timeout, keep):
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
        for step in (["init", config, session], ):
            done = cosmic(*step)
            if done.returncode:
                sys.exit(f"cosmic-ray {step[0]} failed:\n{done.stderr[-2000:]}")
        subprocess.run(["cr-filter-operators", session, config], cwd=repo, env=env,
                       check=True, capture_output=True)
        started = time.monotonic()
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
        report(name, path, _results(repo, session), time.monotonic() - started)
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
    counts = {"killed": 0, "survived": 0, "incompetent": 0, "not run": 0, "skipped": 0}
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
        if outcome == "survived":
            survivors.append((item, result))
    scored = counts["killed"] + counts["survived"]
    score = f"{100.0 * counts['killed'] / scored:.0f}%" if scored else "n/a"
    print(f"{name} ({path}): {len(results)} mutants, killed {counts['killed']}, "
          f"survived {counts['survived']}, incompetent {counts['incompetent']}, filtered "
          f"{counts['skipped']}, not run {counts['not run']}; score {score} of those run "
          f"({seconds / 60:.1f} min)")
    for item, result in survivors:
        mutation = item["mutations"][0]
        line = mutation["start_pos"][0]
        print(f"\nSURVIVED {mutation['module_path']}:{line} {mutation['operator_name']} "
              f"#{mutation['occurrence']}")
        print(result.get("diff", "").rstrip())


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
    args = parser.parse_args()
    if args.list:
        for name, module in MODULES.items():
            print(f"{name}: {module_path(module, mutations.ROOT)} <- "
                  f"{' '.join(module['tests'])}")
        return
    if shutil.which("cosmic-ray") is None:
        sys.exit("cosmic-ray is not installed: pip install -e .[mutation]")
    for name in args.module or list(MODULES):
        run_module(name, args.cap, args.rev, args.timeout, args.keep)


if __name__ == "__main__":
    main()
