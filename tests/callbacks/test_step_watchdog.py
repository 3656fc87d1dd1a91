"""A step that never ends ends the process: past --step_timeout_secs (or 10x
the slowest step after warm-up, at least 5 minutes) one line names the step
and its phase, the exit status is 1 (a launcher restarts) and the last
checkpoint is intact."""
import re
import subprocess
import sys
import threading
import time
import types

import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.callbacks.step_watchdog import StepWatchdog
from towertrain.engine.variable_mgr.replicated import ReplicatedManager
from towertrain.engine.run import watchdog as watchdog_lib
from towertrain.errors import ParamsError

import helpers.cli
from helpers.checkpoint_files import committed_steps, saved_tensors

# Step 4's forward pass blocks (as a collective one member never joins would):
# one TensorFlow call the main thread never returns from. The model's fifth
# call: the Trainer calls a model passed in once on sample images before any
# step (what its outputs are).
_BLOCKED_RUN = """
import sys, time
import numpy as np
import tensorflow as tf
sys.path.insert(0, {tests!r})
from towertrain import Params, Trainer
from helpers import slow_input

class BlockAt(slow_input.SlowCompute):
    runs = 0
    def call(self, x):
        def wait():
            BlockAt.runs += 1
            if BlockAt.runs == 5:
                time.sleep(3600)
            return np.int32(0)
        with tf.control_dependencies([tf.py_function(wait, [], tf.int32)]):
            return tf.identity(x)

import keras
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((slow_input.FEATURES,)), keras.layers.Dense(8, name="h"),
                          BlockAt(0, name="block"), keras.layers.Dense(10, name="out")])
params = Params(device="cpu", num_gpus=1, num_batches=8, num_warmup_batches=0,
                save_model_steps=2, display_every=1, train_dir={train_dir!r},
                step_timeout_secs=2)
Trainer(params, model=model, input_source=slow_input.SlowInput(0)).train()
"""


def test_a_blocked_step_ends_the_process_naming_step_and_phase_with_the_checkpoint_kept(
        tmp_path):
    train_dir = str(tmp_path / "run")
    done = subprocess.run([sys.executable, "-c", _BLOCKED_RUN.format(
        tests=helpers.cli.TESTS_DIR, train_dir=train_dir)], capture_output=True, text=True,
        timeout=180, env=helpers.cli.unbuffered_env())
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-3000:]
    assert re.fullmatch(
        r"towertrain: error: step 4 has run \d+ s, past --step_timeout_secs=2, last in the "
        r"step function's towers \(the batch's forward and backward passes; TensorFlow does "
        r"not say which op or collective is pending\): a hung collective, peer or kernel; exiting with status 1 "
        rf"so a launcher restarts the run from {re.escape(train_dir)}/ckpt-2, the last "
        r"checkpoint", done.stderr.strip().splitlines()[-1]), done.stderr[-3000:]
    assert re.search(r"^3\t", done.stdout, re.M) and not re.search(r"^4\t", done.stdout, re.M)
    assert committed_steps(train_dir) == [2]
    assert saved_tensors(train_dir)["step/.ATTRIBUTES/VARIABLE_VALUE"] == 2  # readable, whole


def _block_at(run, release, after):
    """A tensor that passes `after`'s first tensor through, blocking on the
    step function's `run`-th call until `release` is set."""
    calls = []

    def wait(x):
        calls.append(1)
        if len(calls) == run:
            release.wait(120)
        return x
    first = [t for t in tf.nest.flatten(after, expand_composites=True)
             if isinstance(t, tf.Tensor)][0]
    return tf.py_function(wait, [first], first.dtype)


@pytest.mark.parametrize("method, phase", [
    ("exchange", r"gradient exchange \(every tower's gradients were computed"),
    ("apply", r"update \(the exchanged sums were on every device")])
def test_the_line_names_the_phase_the_step_function_hung_in(monkeypatch, method, phase):
    """The step's own host mark, read when the watch fires: a hang inside the
    exchange (its first gradient held back) or the update (held until the
    exchanged sums are in) is named as that phase, not the towers."""
    release, lines = threading.Event(), []
    monkeypatch.setattr(watchdog_lib.Watchdog, "_fire", lambda self, ran, limit: (
        lines.append(self.message(ran, limit)), release.set()))
    original = getattr(ReplicatedManager, method)

    def held(self, first, *args, **kwargs):
        blocked = _block_at(3, release, first)
        with tf.control_dependencies([blocked]):
            if method == "exchange":  # the exchange's inputs wait: the sums cannot start
                first = [[tf.identity(g) for g in grads] for grads in first]
            return original(self, first, *args, **kwargs)
    monkeypatch.setattr(ReplicatedManager, method, held)
    Trainer(Params(model="trivial", device="cpu", num_gpus=2, variable_update="replicated",
                   batch_size=2, num_batches=4,
                   num_warmup_batches=0, step_timeout_secs=1)).train()
    assert len(lines) == 1, lines
    assert re.fullmatch(rf"step 3 has run \d+ s, past --step_timeout_secs=1, last in the step "
                        rf"function's {phase}; TensorFlow does not say which op or collective "
                        r"is pending\): .*", lines[0]), lines[0]


def test_the_automatic_limit_is_ten_times_the_slowest_step_after_warm_up_at_least_300():
    watch = watchdog_lib.Watchdog(exit=lambda status: None)
    watch.finished(0.5, after_warmup=False)  # warm-up and tracing: not the measure
    assert watch.limit() is None
    watch.finished(2.0, after_warmup=True)
    assert watch.limit() == 300
    watch.finished(45.0, after_warmup=True)
    watch.finished(1.0, after_warmup=True)
    assert watch.limit() == 450
    watch.close()
    assert watchdog_lib.Watchdog(timeout=0).limit() is None  # 0: no watch


def test_a_negative_step_timeout_is_refused():
    with pytest.raises(ParamsError, match=r"^--step_timeout_secs=-1: must be >= 0 seconds"):
        Params(step_timeout_secs=-1)


def _wait_for(condition, seconds=10.0):
    """Polls `condition` until it holds or `seconds` pass (a guard that never
    ran shows as the deadline passing, not as a hang)."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_with_the_default_settings_a_watch_runs_and_reports_a_hung_step(monkeypatch):
    """No --step_timeout_secs (None: the automatic limit): the watch thread
    starts with the first step and, once a step after warm-up armed it, a
    step that runs past 10x the slowest (at least MINIMUM_SECS, shortened
    here) ends the process with status 1."""
    monkeypatch.setattr(watchdog_lib, "MINIMUM_SECS", 0.2)
    exits, lines = [], []
    callback = StepWatchdog(warmup=1, exit=exits.append)
    callback.watchdog._poll = 0.01
    monkeypatch.setattr(watchdog_lib.Watchdog, "_fire", lambda self, ran, limit: (
        lines.append(self.message(ran, limit)), self.exit(1)))
    callback.loop = types.SimpleNamespace(start_step=0)
    for step in (1, 2, 3):  # 1 traces, 2 is warm-up, 3 counts and arms the limit
        callback.before_step(step)
        callback.after_step(step, None, 0.001)
    assert callback.watchdog._thread is not None and callback.watchdog._thread.is_alive()
    callback.before_step(4)  # and never finishes
    assert _wait_for(lambda: exits), "the default watch never fired"
    callback.close()
    assert exits == [1]
    assert re.fullmatch(r"step 4 has run 0 s, past the step limit 0 s \(10x the slowest step "
                        r"after warm-up, 0\.001 s, and at least 0 s; --step_timeout_secs sets "
                        r"it\), last in the step's start: .* \(no --train_dir: it starts over\)",
                        lines[0]), lines[0]


@pytest.mark.parametrize("timeout", [None, 0.3])
def test_a_step_hung_in_warm_up_is_reported_only_with_an_explicit_limit(monkeypatch, timeout):
    """Warm-up steps trace and compile: the automatic limit is not armed by
    them (a hang there waits), an explicit --step_timeout_secs is armed from
    the second step of the process on, warm-up included."""
    monkeypatch.setattr(watchdog_lib, "MINIMUM_SECS", 0.2)
    exits = []
    callback = StepWatchdog(timeout=timeout, warmup=5, exit=exits.append)
    callback.watchdog._poll = 0.01
    callback.loop = types.SimpleNamespace(start_step=0)
    callback.before_step(1)
    callback.after_step(1, None, 0.001)
    callback.before_step(2)  # a warm-up step that never ends
    fired = bool(_wait_for(lambda: exits, seconds=1.5 if timeout is None else 10.0))
    assert callback.watchdog._thread.is_alive() != fired  # watching, or it fired and ended
    callback.close()
    assert fired == (timeout is not None), exits
    assert exits == ([1] if timeout else [])


def test_what_the_automatic_limit_counts_starts_at_the_first_step_after_warm_up():
    """Of a run resumed at step 10 with 3 warm-up steps, steps 11-13 are
    warm-up (their times not the measure, nothing armed); step 14 is the
    first counted, and arms the limit."""
    callback = StepWatchdog(warmup=3, exit=lambda status: None)
    callback.loop = types.SimpleNamespace(start_step=10)
    for step, seconds in [(11, 90.0), (12, 80.0), (13, 70.0)]:
        callback.after_step(step, None, seconds)
        assert (callback.watchdog.slowest, callback.watchdog.limit()) == (None, None), step
    callback.after_step(14, None, 40.0)
    assert (callback.watchdog.slowest, callback.watchdog.limit()) == (40.0, 400.0)
    callback.after_step(15, None, 20.0)
    assert callback.watchdog.limit() == 400.0
    callback.close()


@pytest.mark.parametrize("warmup", [0, 1])
def test_without_warm_up_the_first_step_traces_and_the_second_is_the_first_counted(warmup):
    """With 0 or 1 warm-up steps the first step (it traces the step function)
    is still not the measure: the second is, and arms the limit."""
    callback = StepWatchdog(warmup=warmup, exit=lambda status: None)
    callback.loop = types.SimpleNamespace(start_step=0)
    callback.after_step(1, None, 90.0)
    assert (callback.watchdog.slowest, callback.watchdog.limit()) == (None, None)
    callback.after_step(2, None, 40.0)
    assert (callback.watchdog.slowest, callback.watchdog.limit()) == (40.0, 400.0)
    callback.close()


@pytest.mark.parametrize("num_workers,marks", [(1, False), (2, True), (3, True)])
def test_only_a_multi_worker_run_leaves_exchange_marks(tmp_path, num_workers, marks):
    """The marks name the tasks that never reached a hung step's exchange:
    a worker of 2 or more leaves them, a one-worker cluster has no others."""
    cluster = types.SimpleNamespace(
        num_workers=num_workers, task_index=0,
        workers=[f"localhost:{2000 + i}" for i in range(num_workers)])
    callback = StepWatchdog(train_dir=str(tmp_path), exit=lambda status: None, cluster=cluster)
    assert (callback.watchdog.marks is not None) == marks
    if marks:
        assert callback.watchdog.marks.cluster is cluster
    callback.close()


class _OneRound(threading.Event):
    """The watch's pause: no wait, and one round only."""

    def __init__(self):
        super().__init__()
        self.rounds = 0

    def wait(self, timeout=None):
        self.rounds += 1
        return self.rounds > 1


@pytest.mark.parametrize("ran, fires", [(450.0, False), (450.001, True), (449.999, False)])
def test_a_step_is_ended_only_once_it_has_run_past_the_limit(monkeypatch, ran, fires):
    """The limit (here 10x a slowest step of 45 s) is the longest a step may
    run: at exactly it the step goes on."""
    exits = []
    watch = watchdog_lib.Watchdog(exit=exits.append)
    monkeypatch.setattr(watchdog_lib.Watchdog, "_fire", lambda self, ran, limit: self.exit(1))
    watch.finished(45.0, after_warmup=True)
    watch._step, watch._since = 7, 1000.0
    monkeypatch.setattr(watchdog_lib.time, "monotonic", lambda: 1000.0 + ran)
    watch._stop = _OneRound()
    watch._watch()
    assert exits == ([1] if fires else [])


@pytest.mark.parametrize("slowest, limit", [(29.9, 300.0), (30.0, 300.0), (30.5, 305.0)])
def test_the_automatic_limit_leaves_its_minimum_at_a_slowest_step_of_30_s(slowest, limit):
    watch = watchdog_lib.Watchdog(exit=lambda status: None)
    watch.finished(slowest, after_warmup=True)
    assert watch.limit() == pytest.approx(limit, abs=1e-9)


def test_a_step_timeout_of_0_starts_no_watch(monkeypatch):
    """--step_timeout_secs=0 turns the watch off: no thread, and a step past
    what the automatic limit would allow is never ended."""
    monkeypatch.setattr(watchdog_lib, "MINIMUM_SECS", 0.05)
    exits = []
    callback = StepWatchdog(timeout=0, warmup=1, exit=exits.append)
    callback.watchdog._poll = 0.01
    callback.loop = types.SimpleNamespace(start_step=0)
    for step in (1, 2, 3):
        callback.before_step(step)
        callback.after_step(step, None, 0.001)
    callback.before_step(4)
    time.sleep(0.3)
    callback.close()
    assert (callback.watchdog._thread, exits) == (None, [])
