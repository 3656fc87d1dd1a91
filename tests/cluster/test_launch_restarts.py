"""`python -m towertrain.launch --max_restarts=R`: "restarts every worker after a
failure, up to R times", counted at the boundary (R = failures - 1, R =
failures, R = failures + 1), and never after a signal stopped the workers.

The workers are a few lines of Python (no TensorFlow): each start appends a
line to a file, so the test counts the starts rather than reading the
launcher's words alone."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from helpers import cluster_runs as runs

LAUNCH = [sys.executable, "-m", "towertrain.launch"]

# Task 1 fails with status 3 on each of its first $FAILS starts, else exits 0;
# task 0 sleeps through a start that fails (the launcher stops it), else exits 0.
COUNTING_WORKER = """import os, sys, time
given = [a for a in sys.argv if a.startswith("--task_index=")]  # none for one worker
task = int(given[0].split("=")[1]) if given else 0
fails = int(os.environ["FAILS"])
log = os.path.join(os.environ["WORKER_DIR"], f"starts{task}")
with open(log, "a") as f:
    f.write("start\\n")
start = len(open(log).read().split())
print(f"start {start} of task {task}", flush=True)
if task == 1:
    time.sleep(0.3)
    sys.exit(3 if start <= fails else 0)
if start <= fails:
    time.sleep(120)  # killed by the launcher when task 1 fails
"""


# Prints that it is up, then sleeps; SIGTERM makes it exit 1 (a failure
# status: only the signal tells the launcher not to restart).
SIGNALLED_WORKER = """import os, signal, sys, time
task = int([a for a in sys.argv if a.startswith("--task_index=")][0].split("=")[1])
with open(os.path.join(os.environ["WORKER_DIR"], f"starts{task}"), "a") as f:
    f.write("start\\n")
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
print(f"worker {task} up", flush=True)
time.sleep(120)
"""


def _launch_env(tmp_path, **extra):
    env = runs.env(WORKER_DIR=str(tmp_path), **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    return env


def _starts(tmp_path, task):
    path = tmp_path / f"starts{task}"
    return len(path.read_text().split()) if path.exists() else 0


@pytest.mark.parametrize("failures,max_restarts,status,starts", [
    (1, 0, 3, 1),  # the default: a failure ends the run, nothing restarts
    (1, 1, 0, 2),  # at the limit: one restart, which succeeds
    (2, 1, 3, 2),  # below what is needed: one restart, then the second failure ends it
    (1, 2, 0, 2),  # above: only the restarts needed are made
])
def test_max_restarts_restarts_every_worker_exactly_up_to_r_times(
        tmp_path, failures, max_restarts, status, starts):
    (tmp_path / "counting_worker.py").write_text(COUNTING_WORKER)
    done = subprocess.run([*LAUNCH, "--num_workers=2", f"--max_restarts={max_restarts}",
                           "--stop_grace_secs=0",
                           "--module=counting_worker", "--"],
                          env=_launch_env(tmp_path, FAILS=str(failures)), cwd=runs.REPO,
                          capture_output=True, text=True, timeout=60)
    out = done.stdout
    assert done.returncode == status, out + done.stderr
    assert (_starts(tmp_path, 0), _starts(tmp_path, 1)) == (starts, starts), out
    restarts = re.findall(r"^\[launcher\] restart (\d+) of (\d+): starting 2 workers again$",
                          out, re.M)
    assert restarts == [(str(k), str(max_restarts)) for k in range(1, starts)], out
    assert out.count("[launcher] task 1 failed (exit status 3)") == min(failures, starts), out


def test_workers_a_signal_stopped_are_not_restarted(tmp_path):
    """SIGTERM on the launcher is forwarded; workers that then exit non-zero
    are the user's stop, not a failure to recover from: no restart, whatever
    --max_restarts says, and the launcher exits with their status."""
    (tmp_path / "signalled_worker.py").write_text(SIGNALLED_WORKER)
    launcher = subprocess.Popen([*LAUNCH, "--num_workers=2", "--max_restarts=2",
                                 "--module=signalled_worker", "--"],
                                env=_launch_env(tmp_path), cwd=runs.REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while (_starts(tmp_path, 0), _starts(tmp_path, 1)) != (1, 1):
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.05)
        time.sleep(0.5)  # past the workers' signal.signal
        launcher.send_signal(signal.SIGTERM)
        out, _ = launcher.communicate(timeout=60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert launcher.returncode == 1, out
    assert "[launcher] received SIGTERM: forwarded to every worker" in out
    assert "[launcher] restart" not in out, out
    time.sleep(0.5)  # a wrongly restarted worker would have written by now
    assert (_starts(tmp_path, 0), _starts(tmp_path, 1)) == (1, 1), out


@pytest.mark.parametrize("options,message", [
    (["--num_workers=0"], "--num_workers=0: must be >= 1"),
    (["--num_workers=1", "--max_restarts=-1"], "--max_restarts=-1: must be >= 0"),
])
def test_the_launcher_s_numbers_are_refused_just_below_their_limits(tmp_path, options, message):
    """The last accepted values (--num_workers=1, --max_restarts=0) run above."""
    done = subprocess.run([*LAUNCH, *options, "--module=counting_worker", "--"],
                          env=_launch_env(tmp_path, FAILS="0"), cwd=runs.REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == f"towertrain.launch: error: {message}\n"
    assert not list(tmp_path.iterdir())  # no worker started


def test_one_worker_without_restarts_runs_and_exits_0(tmp_path):
    (tmp_path / "counting_worker.py").write_text(COUNTING_WORKER)
    done = subprocess.run([*LAUNCH, "--num_workers=1", "--max_restarts=0",
                           "--module=counting_worker", "--"],
                          env=_launch_env(tmp_path, FAILS="0"), cwd=runs.REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _starts(tmp_path, 0) == 1
