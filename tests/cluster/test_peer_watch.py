"""A dead peer stops a multi-worker run through the peer watch, not through a
timeout on every collective: TensorFlow keeps one sleeping thread per timed
collective for the whole timeout (tensorflow/tensorflow#62466), which made a
fast model abort with tens of thousands of threads. The killed-worker test
(tests/engine/test_multiworker.py) shows the watch stopping a real run."""
import os
import signal
import subprocess
import threading
import time

import pytest
import tensorflow as tf

from towertrain.config.cluster_spec import Cluster
from towertrain.config.params import Params
from towertrain.engine.distributed import peer_watch

from helpers import cluster_runs as runs
from helpers.ports import free_ports


class FakeContext:
    """check_collective_ops_peer_health fails for the `dead` task names."""

    def __init__(self, dead=()):
        self.dead, self.checked, self.aborted = set(dead), [], []

    def check_collective_ops_peer_health(self, task, timeout_in_ms):
        self.checked.append((task, timeout_in_ms))
        if task in self.dead:
            raise tf.errors.UnavailableError(None, None, "failed to connect to all addresses")

    def abort_collective_ops(self, code, message):
        self.aborted.append((code, message))


CLUSTER = Cluster(("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"), task_index=1)


def _watch(monkeypatch, context, timeout_secs=0.6):
    monkeypatch.setattr(peer_watch.private_api, "eager_context", lambda: context)
    return peer_watch.PeerWatch(CLUSTER, timeout_secs).start()


def test_a_peer_that_stays_unreachable_aborts_the_collectives_naming_it(monkeypatch):
    context = FakeContext(dead={CLUSTER.task_name(2)})
    watch = _watch(monkeypatch, context)
    deadline = time.monotonic() + 10
    while not context.aborted and time.monotonic() < deadline:
        time.sleep(0.05)
    watch.stop()
    assert context.aborted == [(tf.errors.UNAVAILABLE, watch.failure)]
    assert watch.failure.startswith("worker task 2 (127.0.0.1:3) stopped answering "
                                    f"({peer_watch.FAILED_CHECKS} health checks failed: ")
    checked = {task for task, _ in context.checked}
    assert checked == {CLUSTER.task_name(0), CLUSTER.task_name(2)}  # never itself
    assert [t for t, _ in context.checked].count(CLUSTER.task_name(2)) == \
        peer_watch.FAILED_CHECKS


def test_healthy_peers_are_checked_and_never_aborted_and_stop_ends_the_thread(monkeypatch):
    context = FakeContext()
    watch = _watch(monkeypatch, context)
    time.sleep(1.3)  # two rounds, every 0.5 s
    watch.stop()
    assert not watch._thread.is_alive()
    assert len(context.checked) >= 4 and not context.aborted
    # Each check waits at most a share of the timeout: FAILED_CHECKS of them
    # (and their pauses) fit in it.
    assert all(ms == 500 for _, ms in context.checked)


def test_one_process_runs_no_watch():
    assert peer_watch.start(Cluster(("127.0.0.1:1",)), 60) is None


@pytest.mark.slow
def test_a_fast_model_keeps_its_thread_count_with_the_default_timeout(tmp_path):
    """2000 steps of the trivial model on 2 workers with the default 60 s
    timeout: with a timeout on every collective each worker held ~13,000
    threads after 10 s and aborted (status 134)."""
    hosts = ",".join(f"127.0.0.1:{port}" for port in free_ports(2))
    procs, most = [], 0
    try:
        for task in range(2):
            with open(tmp_path / f"task{task}.log", "w") as log:
                procs.append(subprocess.Popen(runs.towertrain(
                    "--model=trivial", "--device=cpu", "--num_gpus=1", "--batch_size=4",
                    "--num_batches=2000", "--num_warmup_batches=0", "--display_every=1000",
                    "--variable_update=collective_all_reduce", f"--worker_hosts={hosts}",
                    f"--task_index={task}"), cwd=runs.REPO, env=runs.env(), stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + 240
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            for proc in procs:
                try:
                    most = max(most, len(os.listdir(f"/proc/{proc.pid}/task")))
                except FileNotFoundError:
                    pass
            time.sleep(0.2)
        statuses = [proc.poll() for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)
    logs = "".join((tmp_path / f"task{t}.log").read_text()[-1500:] for t in range(2))
    assert statuses == [0, 0], logs
    assert runs.last_step_printed((tmp_path / "task0.log").read_text()) == 2000, logs
    assert most < 1000, most


@pytest.mark.slow
def test_a_frozen_peer_stops_the_others_naming_it(tmp_path):
    """SIGSTOP: the peer's sockets stay open, so no connection error reaches
    the collectives and only the watch can stop the run (a killed peer's
    reset connections sometimes fail the step by themselves)."""
    hosts = ",".join(f"127.0.0.1:{port}" for port in free_ports(2))
    logs = [tmp_path / f"task{task}.log" for task in range(2)]
    procs = []
    try:
        for task in range(2):
            with open(logs[task], "w") as log:
                procs.append(subprocess.Popen(runs.towertrain(
                    "--model=trivial", "--device=cpu", "--num_gpus=1", "--batch_size=4",
                    "--num_batches=1000000", "--num_warmup_batches=0", "--display_every=100",
                    "--variable_update=collective_all_reduce", "--collective_timeout_secs=6",
                    f"--worker_hosts={hosts}", f"--task_index={task}"), cwd=runs.REPO,
                    env=runs.env(), stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True))
        deadline = time.monotonic() + 180
        while not runs.last_step_printed(logs[0].read_text()):
            assert time.monotonic() < deadline and procs[0].poll() is None, \
                logs[0].read_text()[-2000:]
            time.sleep(0.2)
        os.kill(procs[1].pid, signal.SIGSTOP)
        frozen_at = time.monotonic()
        status = procs[0].wait(timeout=60)
        stopped_after = time.monotonic() - frozen_at
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)
    chief = logs[0].read_text()
    assert status not in (0, None), chief[-2000:]
    assert "worker task 1 (" in chief and "stopped answering" in chief, chief[-2000:]
    assert stopped_after < 30, stopped_after


class ScriptedContext(FakeContext):
    """Each peer answers (True) or fails (False) its checks in the order of
    its script; once every script has run out the watch is stopped."""

    def __init__(self, scripts, watch_of):
        super().__init__()
        self.scripts = {task: list(script) for task, script in scripts.items()}
        self.watch_of = watch_of

    def check_collective_ops_peer_health(self, task, timeout_in_ms):
        self.checked.append((task, timeout_in_ms))
        script = self.scripts[task]
        answered = script.pop(0) if script else True
        if not any(self.scripts.values()):
            self.watch_of()._stop.set()
        if not answered:
            raise tf.errors.DeadlineExceededError(None, None, "deadline exceeded")


class _NoWait(threading.Event):
    """The watch's pause between rounds, without the wait: rounds run back to back."""

    def wait(self, timeout=None):
        return self.is_set()


def _scripted(monkeypatch, scripts, timeout_secs=0.6):
    """Runs the watch (on this thread) over peers answering as `scripts` say;
    returns what it aborted with."""
    holder = {}
    context = ScriptedContext(scripts, lambda: holder["watch"])
    monkeypatch.setattr(peer_watch.private_api, "eager_context", lambda: context)
    holder["watch"] = watch = peer_watch.PeerWatch(CLUSTER, timeout_secs)
    watch._stop = _NoWait()
    watch._run()
    return context.aborted


@pytest.mark.parametrize("failures_in_a_row, aborted", [
    (peer_watch.FAILED_CHECKS - 1, False), (peer_watch.FAILED_CHECKS, True),
    (peer_watch.FAILED_CHECKS + 1, True)])
def test_a_peer_is_given_up_at_exactly_failed_checks_in_a_row(monkeypatch, failures_in_a_row,
                                                                aborted):
    answers = [False] * failures_in_a_row + [True] * 2
    found = _scripted(monkeypatch, {CLUSTER.task_name(0): [True] * len(answers),
                                    CLUSTER.task_name(2): answers})
    assert bool(found) == aborted, found


def test_a_failed_check_is_forgotten_once_the_peer_answers_again(monkeypatch):
    """Slow answers now and then, never FAILED_CHECKS in a row: the peer is
    alive and the run goes on, however many such failures add up to."""
    flaky = ([False] * (peer_watch.FAILED_CHECKS - 1) + [True]) * 4
    found = _scripted(monkeypatch, {CLUSTER.task_name(0): [True] * len(flaky),
                                    CLUSTER.task_name(2): flaky})
    assert found == []


def test_with_the_default_timeout_a_dead_peer_is_given_up(monkeypatch):
    """No --collective_timeout_secs: the watch of a 2-worker run starts with
    the default timeout's share per check, and a peer that stops answering is
    given up after FAILED_CHECKS of them (rounds back to back here)."""
    from towertrain.engine.distributed import cluster as cluster_lib
    default = cluster_lib.DEFAULT_COLLECTIVE_TIMEOUT_SECS
    assert Params().collective_timeout_secs is None  # the run takes the default
    context = FakeContext()
    monkeypatch.setattr(peer_watch.private_api, "eager_context", lambda: context)
    watch = peer_watch.start(Cluster(("127.0.0.1:1", "127.0.0.1:2"), task_index=0), default)
    try:
        assert watch is not None and watch._thread.is_alive()
        assert watch.check_timeout == default / (2 * peer_watch.FAILED_CHECKS)
    finally:
        peer_watch.stop()
    assert not watch._thread.is_alive()
    found = _scripted(monkeypatch, {CLUSTER.task_name(0): [True] * 4,
                                    CLUSTER.task_name(2): [False] * 4}, timeout_secs=default)
    assert len(found) == 1 and "worker task 2 (127.0.0.1:3) stopped answering" in found[0][1]
