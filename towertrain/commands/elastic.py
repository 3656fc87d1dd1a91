"""The elastic launch: `python -m towertrain.launch --num_workers=N
--min_workers=M [--max_workers=X] -- --train_dir=D --global_batch_size=G ...`.

The run goes on with the workers it has. When a worker fails, the others
stop by themselves (towertrain.engine.distributed.peer_loss: one line each,
the chief saves the step it last completed) and the launcher starts the
survivors again on fresh ports; they resume from that checkpoint, a
topology change at the same global batch (towertrain.plan.global_batch works
out the per-device batch or accumulation steps; the header's `Topology:` and
the run record's `topology_changes` say what changed at which step). Fewer
than M left, or a count the global batch cannot be cut over, ends the run
with the reason. SIGUSR1 to the launcher says a worker is back: up to X, the
workers go on to their next periodic checkpoint (--save_model_steps), stop
together right after the chief saved it (the chief gets SIGUSR1 once it
trains: towertrain.callbacks.cluster_stop) and one more worker is taken in
from there. Without --save_model_steps there is no checkpoint to wait for:
the workers stop together at their next step (SIGTERM's stop, the chief
saving there), as the launcher's line says.
Each change is printed and kept in D/towertrain_elastic.json with the
recovery time (from the failure to the new run's first step).

Imports no TensorFlow.
"""
import json
import os
import re
import signal
import time

from towertrain.engine.distributed import peer_loss
from towertrain.errors import CheckpointError
from towertrain.state import run_record

EVENTS_FILE = "towertrain_elastic.json"
_CHECKPOINT_PATH = re.compile(r'^model_checkpoint_path: "(?:.*/)?ckpt-(\d+)"', re.M)


def refusal(options, flag_value):
    """Why an elastic launch cannot run with these options and worker flags, or None."""
    low, high = options.min_workers, options.max_workers or options.num_workers
    if not 1 <= low <= options.num_workers <= high:
        return (f"--min_workers={low}: needs 1 <= --min_workers <= --num_workers="
                f"{options.num_workers} <= --max_workers={high}")
    if not flag_value("train_dir"):
        return (f"--min_workers={low}: an elastic run goes on from the chief's checkpoint; "
                "give the workers a --train_dir")
    if not flag_value("global_batch_size"):
        return (f"--min_workers={low}: an elastic run keeps the global batch when the "
                "workers change; give the workers --global_batch_size")
    return None


def latest_step(train_dir):
    """The step of train_dir's latest checkpoint (its `checkpoint` state file), or None."""
    try:
        with open(os.path.join(train_dir, "checkpoint")) as f:
            found = _CHECKPOINT_PATH.search(f.read())
    except OSError:
        return None
    return int(found.group(1)) if found else None


def _final_step(train_dir):
    """The run record's final step (the run reached its end), or None."""
    try:
        return run_record.final_step(run_record.read(train_dir))
    except CheckpointError:
        return None


class ElasticRun:
    """The elastic loop. start(count, on_first_step): a started launch.Workers;
    refuse_count(workers): why the global batch cannot be cut over that many
    workers, or None;
    state: the launcher's {"workers", "signals"} (its signal handlers)."""

    def __init__(self, options, flag_value, write, start, state, refuse_count):
        self.options, self.write, self.start, self.state = options, write, start, state
        self.refuse_count = refuse_count
        self.train_dir = flag_value("train_dir")
        self.save_steps = flag_value("save_model_steps")
        self.low = options.min_workers
        self.high = options.max_workers or options.num_workers
        self.count = options.num_workers
        self.asked = 0  # SIGUSR1s not yet answered (the handler only counts them)
        self.waiting = False  # a worker waits to be taken in
        self.events = []

    def _on_sigusr1(self, signum, frame):
        del signum, frame
        self.asked += 1

    def _answer(self):
        """Answers SIGUSR1, between the supervisor's checks: a worker waits to
        be taken in at the workers' next periodic checkpoint, where they stop
        together (towertrain.callbacks.cluster_stop); without periodic
        checkpoints, at a stop on demand, the chief saving there."""
        if not self.asked:
            return
        self.asked = 0
        count = self.count
        if self.waiting:
            self.write("[launcher] a worker is back: one already waits to be taken in")
            return
        if count >= self.high:
            self.write(f"[launcher] a worker is back, but {count} run already "
                       f"(--max_workers={self.high})")
            return
        self.waiting = True
        if self.save_steps:
            self.write(f"[launcher] a worker is back: the {count} workers go on to their next "
                       f"checkpoint (--save_model_steps={self.save_steps}), stop together "
                       f"right after it, then {count + 1} go on from there")
        else:
            self.write(f"[launcher] a worker is back: no --save_model_steps, so no periodic "
                       f"checkpoint to wait for; the {count} workers stop together at their "
                       f"next step (the chief saves there), then {count + 1} go on from there")
        self._ask_for_stop()

    def _ask_for_stop(self):
        """The chief is asked, its request reaches every worker in a step's sum."""
        workers = self.state["workers"]
        if workers is not None:
            workers.signal_chief_once_it_trains(
                signal.SIGUSR1 if self.save_steps else signal.SIGTERM)

    def run(self):
        previous = signal.signal(signal.SIGUSR1, self._on_sigusr1)
        try:
            return self._loop()
        finally:
            signal.signal(signal.SIGUSR1, previous)

    def _loop(self):
        pending = None
        while True:
            count = self.count
            workers = self.start(count, self._first_step(pending) if pending else None)
            self.state["workers"] = workers
            if self.waiting:  # asked before this start (or before a loss)
                self._ask_for_stop()
            status, task = workers.supervise(self.options.stop_grace_secs, poll=self._answer)
            if status == 0 and self.waiting and not self.state["signals"]:
                finished = _final_step(self.train_dir)
                if finished is not None:
                    self.write(f"[launcher] the run finished at step {finished} before the "
                               "waiting worker was taken in")
                    return 0
                self.waiting = False
                pending = self._change(count, count + 1, "taken in", [count],
                                       time.monotonic())
                self.count += 1
                continue
            if status == 0:
                return 0
            failed_at = time.monotonic()
            self.write(f"[launcher] task {task} failed (exit status {status})")
            if self.state["signals"]:
                return status
            statuses = workers.statuses()
            lost = [k for k, s in enumerate(statuses) if s not in (0, peer_loss.EXIT_STATUS)]
            left = count - len(lost)
            if left < self.low:
                self.write(f"[launcher] {left} worker(s) left, fewer than --min_workers="
                           f"{self.low}: the run stops (--train_dir={self.train_dir} keeps "
                           "its last checkpoint)")
                return status
            reason = self.refuse_count(left)
            if reason:
                self.write(f"[launcher] cannot go on with {left} worker(s): {reason}")
                return status
            pending = self._change(count, left, "lost", lost, failed_at)
            self.count = left

    def _change(self, before, after, what, tasks, since):
        """Says and records a change of the worker count; returns the event."""
        step = latest_step(self.train_dir)
        event = {"event": what, "tasks": tasks, "workers_before": before,
                 "workers_after": after, "step": step, "since": since}
        if what == "taken in":
            event["at"] = ("periodic checkpoint" if self.save_steps
                           else "stop on demand (no --save_model_steps)")
        self.write(f"[launcher] {what} task(s) {', '.join(map(str, tasks))}: going on with "
                   f"{after} worker(s) from step {step} (--global_batch_size kept)")
        self.events.append(event)
        return event

    def _first_step(self, event):
        def seen(line):
            seconds = time.monotonic() - event.pop("since")
            event["recovery_seconds"] = round(seconds, 3)
            event["first_step"] = int(line.split("\t", 1)[0])
            self.write(f"[launcher] recovered in {seconds:.1f} s: {event['workers_after']} "
                       f"worker(s) trained step {event['first_step']}")
            self._save()
        return seen

    def _save(self):
        events = [{k: v for k, v in e.items() if k != "since"} for e in self.events]
        path = os.path.join(self.train_dir, EVENTS_FILE)
        try:
            with open(path + ".tmp", "w") as f:
                json.dump(events, f, indent=1)
            os.replace(path + ".tmp", path)
        except OSError as err:
            self.write(f"[launcher] could not record the change in {path}: {err}")
