"""The straggler report over repeated short runs: how many name the slowed
task with its kind of delay, and how many clean runs name no one.

    python bench/bench_straggler_repeat.py [--runs=10] [--clean_runs=5]
        [--workers=3] [--sleep=0.03] [--timeout=300]

tests/cluster/test_straggler_report.py checks one run of 30 windows; this
repeats short runs. Each launches --workers workers (python -m
towertrain.launch --module=helpers.straggler_worker: the test hook of
tests/helpers/straggler_worker.py) of the trivial model for 30 steps,
--display_every=10. In a slowed run the last task sleeps --sleep seconds a
step from step 11 on: in its input on odd runs, in its towers on even ones.
A slowed run names it when both of its slowed windows (steps 11-20, 21-30)
name that task with that kind and its clean window (1-10) names no one; a
clean run (no hook) when none of its windows names anyone. Prints each run
and the counts.
"""
import argparse
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPORT = re.compile(r"^\[task 0\] Straggler: worker task (\d+) \([^)]*\) reached the exchange "
                    r"[\d.]+ ms after the others' median in steps (\d+)-(\d+) "
                    r"\(median step [\d.]+ ms\): slow (input|compute) ", re.M)
STEPS, EVERY, SLOW_FROM = 30, 10, 11


def reports(log):
    """(task, first step, last step, kind) of each Straggler line of the chief."""
    return [(int(task), int(first), int(last), kind)
            for task, first, last, kind in REPORT.findall(log)]


def names_it(found, task, kind):
    """A slowed run's verdict: every slowed window names `task` with `kind`,
    no window before names anyone, and nothing else is named."""
    slowed = {first: (t, k) for t, first, _, k in found if first >= SLOW_FROM}
    wanted = range(SLOW_FROM, STEPS + 1, EVERY)
    return (all(slowed.get(first) == (task, kind) for first in wanted)
            and not [r for r in found if r[1] < SLOW_FROM] and len(found) == len(wanted))


def one_run(args, kind=None):
    """The chief's Straggler lines of one short run (kind None: clean)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    env.pop("TF_DETERMINISTIC_OPS", None)  # it refuses the step's timestamps
    env["PYTHONPATH"] = os.pathsep.join([REPO, os.path.join(REPO, "tests"),
                                         env.get("PYTHONPATH", "")])
    if kind is not None:
        env.update(STRAGGLER_TASK=str(args.workers - 1), STRAGGLER_SECONDS=str(args.sleep),
                   STRAGGLER_PHASES=f"{kind}:{SLOW_FROM}:{STEPS}")
    command = [sys.executable, "-m", "towertrain.launch", f"--num_workers={args.workers}",
               "--module=helpers.straggler_worker", "--", "--model=trivial", "--device=cpu",
               "--batch_size=4", f"--num_batches={STEPS}", "--num_warmup_batches=0",
               f"--display_every={EVERY}"]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=args.timeout)
    if done.returncode != 0:
        raise RuntimeError(f"exit {done.returncode}:\n{(done.stdout + done.stderr)[-2000:]}")
    return reports(done.stdout + done.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="slowed runs")
    parser.add_argument("--clean_runs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--sleep", type=float, default=0.03)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    named = clean = 0
    load_at_start = os.getloadavg()[0]
    for run in range(args.runs):
        kind = "input" if run % 2 == 0 else "compute"
        found = one_run(args, kind)
        ok = names_it(found, args.workers - 1, kind)
        named += ok
        print(f"slowed run {run + 1} ({kind}): {'named' if ok else 'MISSED'} {found}",
              flush=True)
    for run in range(args.clean_runs):
        found = one_run(args)
        clean += not found
        print(f"clean run {run + 1}: {'no one' if not found else 'NAMED'} {found}", flush=True)
    print(f"\n{args.workers} workers, trivial model, {STEPS} steps, windows of {EVERY}, "
          f"sleep {args.sleep * 1e3:g} ms from step {SLOW_FROM}: named in {named} of "
          f"{args.runs} slowed runs; no one named in {clean} of {args.clean_runs} clean runs "
          f"(load average, 1 min: {load_at_start:.2f} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end)")


if __name__ == "__main__":
    main()
