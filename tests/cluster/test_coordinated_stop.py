"""SIGTERM on one worker of a 2-worker run: every worker stops at the same
step, the chief saves there, all exit 0, and the same commands resume to the
uninterrupted run's weights.

The resumed run is itself stopped (by the other worker's signal) and its
checkpoint compared with the uninterrupted run's at that step: a wrong resume
shows there already, so no third launch trains the rest of the run (that the
epochs end exact after a resume is tests/cluster/test_topology_change.py's)."""
import os
import re
import signal

import pytest

from helpers import cluster_runs as runs
from helpers.ports import free_ports

EPOCHS = runs.EPOCHS  # the signal lands within a few steps; the rest is margin


def _stopped_steps(log):
    return [int(s) for s in re.findall(r"^Stopped at step (\d+) with every worker", log, re.M)]


def _run_and_signal(tmp_path, name, flags, target, after_step):
    """Starts both workers, sends SIGTERM to task `target` once the chief has
    trained past `after_step`; returns (step both stopped at, their logs)."""
    hosts = ",".join(f"127.0.0.1:{port}" for port in free_ports(2))
    with runs.Processes(str(tmp_path)) as procs:
        for task in range(2):
            procs.start(runs.towertrain(*flags, f"--worker_hosts={hosts}",
                                        f"--task_index={task}"), f"{name}_task{task}")
        procs.wait_for(lambda: runs.last_step_printed(procs.log(0)) > after_step, 240,
                       f"step {after_step + 1}")
        os.kill(procs.procs[target].pid, signal.SIGTERM)
        statuses = procs.wait(timeout=120)
        logs = [procs.log(0), procs.log(1)]
    assert statuses == [0, 0], logs[0][-2000:] + logs[1][-2000:]
    stopped = [_stopped_steps(log) for log in logs]
    assert len(stopped[0]) == 1 and stopped[0] == stopped[1], logs
    assert "received SIGTERM: every worker stops at the same step" in logs[target]
    assert "a stop request from another worker" in logs[1 - target]
    return stopped[0][0], logs


@pytest.mark.slow
def test_sigterm_on_either_worker_stops_both_at_one_step_and_resume_is_exact(
        tmp_path, tmp_path_factory):
    data_dir, reference = runs.data_and_reference(tmp_path_factory)
    train_dir = str(tmp_path / "train")
    flags = runs.run_flags(data_dir, train_dir, EPOCHS, *runs.topology(2, 1),
                           "--save_model_steps=1000")  # only the stop and the end save
    # The notice on the non-chief worker.
    first, logs = _run_and_signal(tmp_path, "run1", flags, target=1, after_step=2)
    assert 2 < first < 6 * EPOCHS
    assert runs.checkpoint_steps(train_dir) == [first]
    assert f"saved checkpoint at step {first}" in logs[0]
    # Resumed by the same commands; this time the chief is told to stop.
    second, logs = _run_and_signal(tmp_path, "run2", flags, target=0, after_step=first + 2)
    assert f"from step {first}" in logs[0] and f"ckpt-{first}" in logs[1]
    assert first + 2 < second < 6 * EPOCHS
    assert runs.checkpoint_steps(train_dir) == [first, second]
    # Both stops saved the uninterrupted run's weights at their steps.
    runs.assert_same_model(train_dir, reference, step=first)
    runs.assert_same_model(train_dir, reference, step=second)
