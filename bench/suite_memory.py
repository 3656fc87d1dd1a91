"""Peak memory and wall time of a test command's whole process tree.

    python bench/suite_memory.py                      # the CI line: pytest -q -n 2 --dist worksteal
    python bench/suite_memory.py -- python -m pytest -q tests/engine/test_equivalence.py

The suite's budget is 18 minutes on 2 cores, with the whole run's peak memory
under 12 GB. One number per process is not enough: pytest-xdist
runs two workers, and tests start subprocesses (the CLI, multi-worker clusters,
the wheel's venv), so this samples the summed RSS of the command and all its
descendants every second (from /proc, no dependencies) and prints the peak, when
it happened, the largest single process at that moment, and the wall time.
With --curve FILE it also writes "seconds total_MB largest_MB" per sample.
"""
import argparse
import os
import subprocess
import sys
import threading
import time

CI_COMMAND = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "worksteal"]


def _children_map():
    """pid -> [child pids] for every process visible in /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                # The command name may hold spaces or parentheses: split after the last ')'.
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # the process ended while we looked
        children.setdefault(ppid, []).append(int(entry))
    return children


def _rss_mb(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, IndexError, ValueError):
        return 0.0


def tree_rss(root):
    """(total MB, largest single process MB, process count) of root and its descendants."""
    children = _children_map()
    stack, sizes = [root], []
    while stack:
        pid = stack.pop()
        sizes.append(_rss_mb(pid))
        stack.extend(children.get(pid, ()))
    return sum(sizes), max(sizes), len(sizes)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--curve", help="write one 'seconds total_MB largest_MB' line per sample")
    parser.add_argument("command", nargs="*", help="the command (after --); default: the CI line")
    args = parser.parse_args(argv)
    command = args.command or CI_COMMAND

    start = time.monotonic()
    proc = subprocess.Popen(command)
    peak = {"total": 0.0, "largest": 0.0, "procs": 0, "at": 0.0}
    curve = open(args.curve, "w") if args.curve else None
    done = threading.Event()

    def sample():
        while not done.is_set():
            total, largest, count = tree_rss(proc.pid)
            now = time.monotonic() - start
            if curve:
                curve.write(f"{now:.0f} {total:.0f} {largest:.0f}\n")
                curve.flush()
            if total > peak["total"]:
                peak.update(total=total, largest=largest, procs=count, at=now)
            done.wait(args.interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    rc = proc.wait()
    wall = time.monotonic() - start
    done.set()
    sampler.join()
    if curve:
        curve.close()
    print(f"suite_memory: peak {peak['total'] / 1024:.2f} GB summed RSS over "
          f"{peak['procs']} processes at {peak['at'] / 60:.1f} min (largest process "
          f"{peak['largest'] / 1024:.2f} GB); wall {int(wall // 60)}:{wall % 60:04.1f}; "
          f"exit {rc}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
