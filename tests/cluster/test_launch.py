"""`python -m towertrain.launch`: N workers on loopback ports, task-prefixed
output, first failure's status with every process reaped, restarts."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from helpers import cluster_runs as runs

LAUNCH = [sys.executable, "-m", "towertrain.launch"]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead too (its parent has not reaped it yet).
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_worker_exiting_1_stops_the_launcher_with_1_and_no_process_left(tmp_path):
    env = runs.env(FAKE_WORKER_DIR=str(tmp_path), FAKE_WORKER_FAILS="1")
    started = time.monotonic()
    done = subprocess.run([*LAUNCH, "--num_workers=3", "--module=helpers.fake_worker", "--",
                           "--model=trivial"], env=env, cwd=runs.REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert time.monotonic() - started < 30
    assert "[task 1] failing" in done.stdout and "[task 0] fake worker 0 up" in done.stdout
    assert "[launcher] task 1 failed (exit status 1); stopped every worker" in done.stdout
    pids = [int(open(tmp_path / f"task{k}.pid").read()) for k in range(3)]
    assert not [pid for pid in pids if _alive(pid)]


def test_usage_errors_exit_2():
    for flags, message in [(["--num_workers=0"], "--num_workers=0: must be >= 1"),
                           (["--num_workers=2", "--", "--task_index=1"],
                            "--task_index=1: the launcher sets --task_index"),
                           (["--num_workers=2", "--", "--variable_update=replicated"],
                            "2 workers need --variable_update=collective_all_reduce")]:
        done = subprocess.run([*LAUNCH, *flags], env=runs.env(), cwd=runs.REPO,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and message in done.stderr, done.stderr


@pytest.mark.slow
def test_two_workers_through_the_launcher_killed_once_restart_and_equal_one_process(
        tmp_path, tmp_path_factory):
    """Through the launcher, 2 workers train as 1 process with both devices;
    task 1 SIGKILLed mid-run: with --max_restarts=1 both start again from the
    last checkpoint and end on the uninterrupted run's weights."""
    epochs = runs.EPOCHS
    data_dir, reference = runs.data_and_reference(tmp_path_factory)
    train_dir = str(tmp_path / "train")
    flags = runs.run_flags(data_dir, train_dir, epochs, *runs.topology(2, 1),
                           "--save_model_steps=6")
    with runs.Processes(str(tmp_path)) as procs:
        procs.start([*LAUNCH, "--num_workers=2", "--max_restarts=1", "--", *flags], "launcher")
        procs.wait_for(lambda: any(s >= 6 for s in runs.checkpoint_steps(train_dir)), 240,
                       "a checkpoint at step 6")
        pid = int(re.search(r"^\[launcher\] task 1: pid (\d+)$", procs.log(0), re.M).group(1))
        os.kill(pid, signal.SIGKILL)
        assert procs.wait(timeout=300) == [0], procs.log(0)[-3000:]
        log = procs.log(0)
    assert "[launcher] task 1 failed (exit status 137)" in log, log[-3000:]
    assert "[launcher] restart 1 of 1" in log
    assert re.search(r"^\[task 0\] Resumed: +from step \d+", log, re.M), log[-3000:]
    assert re.search(r"^\[task 0\] Cluster: +2 workers x 1 devices, task 0 of 2 \(chief\)",
                     log, re.M)
    assert runs.checkpoint_steps(train_dir)[-1] == 6 * epochs
    runs.assert_same_model(train_dir, reference)
