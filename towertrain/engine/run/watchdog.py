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

Phases: the trainer marks where its step is with `mark(phase)` (the input,
the step function, the devices' sync). Inside the step function the step
itself sets a host variable as each phase's inputs are computed (towers,
exchange, update: engine/step/train_step.py); the watch reads it when it
fires. TensorFlow does not say which op or collective of that phase is pending.

Multi-worker, the line also names the tasks that never reached the hung
step's exchange, from the marks each worker's watch leaves aside once its
step has run half the limit (towertrain.engine.run.exchange_marks).
"""
import os
import sys
import threading
import time

MINIMUM_SECS = 300.0
FACTOR = 10.0
INPUT = "input (waiting for the step's batch)"
STEP_FUNCTION = "the step function"
DEVICE_SYNC = "the devices' sync (--sync_on_finish)"
# The step function's phases, as its host variable holds them.
TOWERS, EXCHANGE, UPDATE = 1, 2, 3
_IN_STEP = {TOWERS: ("towers", "the batch's forward and backward passes"),
            EXCHANGE: ("gradient exchange", "every tower's gradients were computed"),
            UPDATE: ("update", "the exchanged sums were on every device")}
READ_SECS = 5.0  # how long the watch waits to read the step's variable
_MARK_WORDS = {INPUT: "its input", DEVICE_SYNC: "its devices' sync"}
UNREAD_MARK = "its step function (the phase unread)"
# Multi-worker, a step past this share of the limit leaves its exchange mark.
MARK_SHARE = 0.5

_PHASE = {"name": None, "in_step": None}


def mark(phase, in_step=None):
    """The phase the running step enters now (read by the watch when it
    fires); in_step: the step function's phase variable, for STEP_FUNCTION."""
    _PHASE["name"], _PHASE["in_step"] = phase, in_step


def _read_phase():
    """(the phase in the line's words, in a mark's words, whether the step's
    exchange has begun): the exchange marks (engine/run/exchange_marks.py)
    tell a worker that never reached it from one waiting in it."""
    name, variable = _PHASE["name"], _PHASE["in_step"]
    if name is None:
        return "the step's start", "its step's start", False
    if variable is None:
        return name, _MARK_WORDS.get(name, name), name == DEVICE_SYNC
    read = {}
    # Read aside: if TensorFlow cannot answer, the watch still exits.
    reader = threading.Thread(target=lambda: read.update(value=int(variable.numpy())),
                              daemon=True)
    reader.start()
    reader.join(READ_SECS)
    if read.get("value") not in _IN_STEP:
        return f"{name} (its phase could not be read)", UNREAD_MARK, False
    phase, reached = _IN_STEP[read["value"]]
    return (f"{name}'s {phase} ({reached}; TensorFlow does not say which op or collective "
            "is pending)", f"its {phase}", read["value"] != TOWERS)


class Watchdog:
    """Watches one run's steps; `started(step)` before each, `finished(...)` after.

    timeout: --step_timeout_secs (None: automatic, 0: off); where: called at
    firing for the text that says what a restart resumes from; exit: os._exit
    (tests pass their own); marks: multi-worker, the run's
    exchange_marks.ExchangeMarks (None: one process)."""

    def __init__(self, timeout=None, where=lambda: "", exit=os._exit, poll_secs=None,
                 marks=None):
        self.timeout = timeout
        self.where = where
        self.exit = exit
        self.marks = marks
        self._marked = None  # (step, phase words, reached): this task's mark
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
            if self.marks is not None:
                self.marks.clear()  # a run before this one's
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
        mark(None)  # holds no step's variable past the run
        self._stop.set()
        if self.marks is not None and self._thread is not None:
            self.marks.clear()

    def _watch(self):
        while not self._stop.wait(self._poll):
            since, limit = self._since, self.limit()
            if since is None or limit is None:
                continue
            ran = time.monotonic() - since
            if ran > limit:
                self._fire(ran, limit)
                return
            if self.marks is not None and ran > MARK_SHARE * limit and self._mark_may_move():
                self._leave_mark(_read_phase())

    def _mark_may_move(self):
        """Whether reading the phase again could change this step's mark: it
        has none yet, or one short of the exchange that was read."""
        step, words, reached = self._marked or (None, None, None)
        return step != self._step or not (reached or words == UNREAD_MARK)

    def _leave_mark(self, phase):
        """This task's exchange mark for the running step, when it moved on."""
        _, words, reached = phase
        if self._marked != (self._step, words, reached):
            self.marks.publish(self._step, words, reached)
            self._marked = (self._step, words, reached)

    def describe_limit(self, limit):
        if self.timeout:
            return f"--step_timeout_secs={self.timeout:g}"
        return (f"the step limit {limit:.0f} s ({FACTOR:g}x the slowest step after warm-up, "
                f"{self.slowest:.3g} s, and at least {MINIMUM_SECS:.0f} s; "
                "--step_timeout_secs sets it)")

    def message(self, ran, limit):
        """The line the watch prints when the running step has run `ran` s;
        multi-worker, with the other tasks' place at the step's exchange."""
        phase = _read_phase()
        others = ""
        if self.marks is not None:
            self._leave_mark(phase)  # for the others whose watch fires later
            others = self.marks.describe(self._step)
            others = f"; {others}" if others else ""
        return (f"step {self._step} has run {ran:.0f} s, past {self.describe_limit(limit)}, "
                f"last in {phase[0]}{others}: a hung collective, peer or kernel; exiting with "
                f"status 1 so a launcher restarts the run{self.where()}")

    def _fire(self, ran, limit):
        print(f"towertrain: error: {self.message(ran, limit)}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        self.exit(1)
