"""The step watchdog: a step that never ends ends the process.

A collective that never completes (a deadlocked group, a peer stuck in a
kernel) waits forever, and the peer watch sees every peer alive. As
PyTorch's NCCL watchdog does, a thread watches the step in progress: once it
has run longer than the limit it prints one line naming the step and the
phase it last entered and exits the process (status 1), which
towertrain.launch and Slurm treat as a failure to restart from the last
checkpoint. The thread never touches the checkpoints (saves run between
steps, where the watch is off), so the last one is intact.

The limit: --step_timeout_secs when given (0: no watch), else 10x the
slowest step after warm-up and at least MINIMUM_SECS, armed once a step
after warm-up has finished (the first steps trace and compile). The main
thread sits in one TensorFlow call the whole time, so no Python exception
can reach it: the exit is os._exit.

Phases: the step marks where it is with `mark(phase)` (towertrain.trainer's
step: the input, the step function, the devices' sync). Inside the step
function, TensorFlow does not say which of the towers, the exchange or the
update is pending.
"""
import os
import sys
import threading
import time

MINIMUM_SECS = 300.0
FACTOR = 10.0
INPUT = "input (waiting for the step's batch)"
STEP_FUNCTION = ("the step function (towers, exchange, apply; TensorFlow does not say which "
                 "op or collective is pending)")
DEVICE_SYNC = "the devices' sync (--sync_on_finish)"

_PHASE = {"name": None}


def mark(phase):
    """The phase the running step enters now (read by the watch when it fires)."""
    _PHASE["name"] = phase


class Watchdog:
    """Watches one run's steps; `started(step)` before each, `finished(...)` after.

    timeout: --step_timeout_secs (None: automatic, 0: off); where: called at
    firing for the text that says what a restart resumes from; exit: os._exit
    (tests pass their own)."""

    def __init__(self, timeout=None, where=lambda: "", exit=os._exit, poll_secs=None):
        self.timeout = timeout
        self.where = where
        self.exit = exit
        self.slowest = None  # the slowest step after warm-up so far, seconds
        self._step = None
        self._since = None
        self._armed = False
        self._stop = threading.Event()
        self._poll = poll_secs or (min(1.0, timeout / 10) if timeout else 1.0)
        self._thread = None

    def limit(self):
        """Seconds a step may run now; None while unarmed."""
        if not self._armed:
            return None
        if self.timeout:
            return self.timeout
        return max(MINIMUM_SECS, FACTOR * self.slowest)

    def started(self, step):
        if self.timeout == 0:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="step-watchdog",
                                            daemon=True)
            self._thread.start()
        mark(None)
        self._step, self._since = step, time.monotonic()

    def finished(self, seconds, after_warmup):
        """The step just run took `seconds`; after_warmup: it counts for the
        automatic limit (and arms it). The first step of a process traces, so
        it arms an explicit limit only for the steps after it."""
        self._since = None
        if after_warmup:
            self.slowest = max(self.slowest or 0.0, seconds)
        if self.timeout or after_warmup:
            self._armed = True

    def close(self):
        self._since = None
        self._stop.set()

    def _watch(self):
        while not self._stop.wait(self._poll):
            since, limit = self._since, self.limit()
            if since is None or limit is None:
                continue
            ran = time.monotonic() - since
            if ran > limit:
                self._fire(ran, limit)
                return

    def describe_limit(self, limit):
        if self.timeout:
            return f"--step_timeout_secs={self.timeout:g}"
        return (f"the step limit {limit:.0f} s ({FACTOR:g}x the slowest step after warm-up, "
                f"{self.slowest:.3g} s, and at least {MINIMUM_SECS:.0f} s; "
                "--step_timeout_secs sets it)")

    def message(self, ran, limit):
        """The line the watch prints when the running step has run `ran` s."""
        phase = _PHASE["name"] or "the step's start"
        return (f"step {self._step} has run {ran:.0f} s, past {self.describe_limit(limit)}, "
                f"last in {phase}: a hung collective, peer or kernel; exiting with status 1 "
                f"so a launcher restarts the run{self.where()}")

    def _fire(self, ran, limit):
        print(f"towertrain: error: {self.message(ran, limit)}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        self.exit(1)
