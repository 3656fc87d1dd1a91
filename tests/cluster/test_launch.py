"""`python -m towertrain.launch`: N workers on loopback ports, task-prefixed
output, first failure's status with every process reaped, restarts."""
import json
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
    done = subprocess.run([*LAUNCH, "--num_workers=3", "--stop_grace_secs=0",
                           "--module=helpers.fake_worker", "--",
                           "--model=trivial"], env=env, cwd=runs.REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert time.monotonic() - started < 30
    assert "[task 1] failing" in done.stdout and "[task 0] fake worker 0 up" in done.stdout
    assert "[launcher] task 1 failed (exit status 1); stopped every worker" in done.stdout
    pids = [int(open(tmp_path / f"task{k}.pid").read()) for k in range(3)]
    assert not [pid for pid in pids if _alive(pid)]


def _lingering_survivors(tmp_path, *options):
    """A launch where task 1 fails and tasks 0 and 2 say their lost-peer line,
    then wait 600 s (as a real survivor waits for the others' health checks):
    the launcher's output, once it exited within 60 s."""
    env = runs.env(FAKE_WORKER_DIR=str(tmp_path), FAKE_WORKER_FAILS="1",
                   FAKE_WORKER_SURVIVORS_SAY="1", FAKE_WORKER_DONE_WITH="2")
    done = subprocess.run([*LAUNCH, "--num_workers=3", "--stop_grace_secs=300", *options,
                           "--module=helpers.fake_worker", "--", "--model=trivial",
                           f"--train_dir={tmp_path}", "--global_batch_size=12"],
                          env=env, cwd=runs.REPO, capture_output=True, text=True, timeout=60)
    for task in (0, 2):
        assert f"[task {task}] towertrain: error: worker task {task} lost worker task 1" in (
            done.stdout), done.stdout
    return done


def test_survivors_that_said_their_line_stop_waiting_once_all_have(tmp_path):
    """Their wait only keeps them visible to each other: the launcher ends it
    instead of waiting the grace (300 s here) or their 600 s."""
    done = _lingering_survivors(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "[launcher] task 1 failed (exit status 1); stopped every worker" in done.stdout
    pids = [int(open(tmp_path / f"task{k}.pid").read()) for k in range(3)]
    assert not [pid for pid in pids if _alive(pid)]


def test_an_elastic_launch_counts_the_survivors_it_stopped_waiting_as_survivors(tmp_path):
    done = _lingering_survivors(tmp_path, "--min_workers=2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.findall(r"^\[launcher\] lost task\(s\) (.*): going on with (\d) worker",
                      done.stdout, re.M) == [("1", "2")], done.stdout


def test_usage_errors_exit_2():
    for flags, message in [(["--num_workers=0"], "--num_workers=0: must be >= 1"),
                           (["--num_workers=2", "--", "--task_index=1"],
                            "--task_index=1: the launcher sets --task_index"),
                           (["--num_workers=2", "--", "--variable_update=replicated"],
                            "2 workers need --variable_update=collective_all_reduce")]:
        done = subprocess.run([*LAUNCH, *flags], env=runs.env(), cwd=runs.REPO,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and message in done.stderr, done.stderr


ARGV_WORKER = """import json, sys
print(json.dumps(sys.argv[1:]), flush=True)
"""


def _workers_argv(tmp_path, flags):
    """Each task's argv as the launcher gives it to a worker that prints it."""
    (tmp_path / "argv_worker.py").write_text(ARGV_WORKER)
    env = runs.env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    done = subprocess.run([*LAUNCH, "--num_workers=2", "--module=argv_worker", "--", *flags],
                          env=env, cwd=runs.REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(re.search(rf"^\[task {task}\] (\[.*\])$", done.stdout, re.M).group(1))
            for task in range(2)]


def test_the_launcher_adds_collective_all_reduce_unless_given(tmp_path):
    for given in ([], ["--variable_update=collective_all_reduce"]):
        for task, argv in enumerate(_workers_argv(tmp_path, ["--model=trivial", *given])):
            assert argv[0] == "--model=trivial" and f"--task_index={task}" in argv, argv
            assert [a for a in argv if a.startswith("--variable_update")] == [
                "--variable_update=collective_all_reduce"], (given, argv)
            hosts = [a for a in argv if a.startswith("--worker_hosts=")]
            assert len(hosts) == 1 and len(hosts[0].split(",")) == 2, argv


@pytest.mark.slow
def test_ctrl_c_on_the_launcher_is_the_coordinated_stop_of_every_worker(tmp_path):
    """The workers run in their own sessions (a terminal's Ctrl-C reaches only
    the launcher): SIGINT on the launcher alone, forwarded, stops both workers
    at one step and everything exits 0. No --variable_update: the launcher
    adds collective_all_reduce."""
    flags = ["--model=trivial", "--device=cpu", "--num_gpus=1", "--batch_size=8",
             "--num_batches=1000000", "--num_warmup_batches=0", "--display_every=10",
             "--collective_timeout_secs=20"]
    with runs.Processes(str(tmp_path)) as procs:
        launcher = procs.start([*LAUNCH, "--num_workers=2", "--", *flags], "launcher")
        procs.wait_for(lambda: re.search(r"^\[task 0\] 10\timages/sec", procs.log(0), re.M)
                       and "[task 1] worker task 1 of 2" in procs.log(0), 240,
                       "the chief's step 10 and the worker's line")
        os.kill(launcher.pid, signal.SIGINT)
        try:
            status = launcher.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the launcher did not stop within 60 s of SIGINT:\n"
                        + procs.log(0)[-3000:])
        log = procs.log(0)
    assert status == 0, log[-3000:]
    assert "[launcher] received SIGINT: forwarded to every worker" in log
    # Every worker got the signal itself (not only the stop request through the
    # collective), and both stopped at the same step.
    for task in range(2):
        assert f"[task {task}] towertrain: received SIGINT: every worker stops at the same " \
            "step" in log, log[-3000:]
    stopped = [re.findall(rf"^\[task {task}\] Stopped at step (\d+) with every worker "
                          r"\(SIGINT; no --train_dir, nothing saved\)$", log, re.M)
               for task in range(2)]
    assert len(stopped[0]) == 1 and stopped[0] == stopped[1], log[-3000:]
    assert 10 <= int(stopped[0][0]) < 1000000
    assert "failed" not in log, log[-3000:]


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
    assert re.search(r"^\[task 0\] Cluster: +2 workers x 1 device, task 0 of 2 \(chief\)",
                     log, re.M)
    assert runs.checkpoint_steps(train_dir)[-1] == 6 * epochs
    runs.assert_same_model(train_dir, reference)
