"""Multi-worker SIGINT/SIGTERM: every worker stops at the same step.

A preemption notice reaches one worker (or some of them). The signal handler
only sets this worker's stop request, a variable the step reads: the request
travels as one more value in the collective that already sums the step's
example count (towertrain.engine.step.train_step), so after that step every worker
knows that some worker was asked to stop, in the same step and without an
extra round trip. Each then trains on what its staging areas hold up to one
agreed step (that step + --staging_depth, a fence for every worker), the
chief saves there, and every worker returns normally (exit status 0). The
same commands resume from that checkpoint.

SIGUSR1 asks for a stop at the next periodic checkpoint instead (the elastic
launch's take-back, towertrain.commands.elastic): the request travels in the
same sum, as AT_CHECKPOINT, and every worker stops right after the first
--save_model_steps checkpoint past its staged batches, the chief having saved
there. Without --save_model_steps there is no such checkpoint: SIGUSR1 stops
at the same step as SIGTERM does.

A second signal exits at once (status 128 + signal), as on one process.
A crashed or killed worker is not a stop request: the others fail their next
collective within --collective_timeout_secs, as before.
"""
import os
import signal
import sys

from .base import Callback

OTHER_WORKER = "a stop request from another worker"
AT_CHECKPOINT_SIGNAL = signal.SIGUSR1
# A stop at the checkpoint counts this much in the summed requests, a stop
# now 1: the sum tells both apart while fewer workers than this ask.
AT_CHECKPOINT = 1024


class ClusterStop(Callback):
    """Stops every worker of a multi-worker run at one step on a signal.

    handles: the run's RunHandles (stop_request, staging_depth, add_fence);
    train_dir: --train_dir, for the last line (where the chief saves)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, handles, write=print, train_dir=None, save_steps=None):
        """save_steps: --save_model_steps, where a stop at the checkpoint lands."""
        self.handles = handles
        self.write = write
        self.train_dir = train_dir
        self.save_steps = save_steps
        self.received = None  # the signal this worker got, by name
        self.at_checkpoint = None  # SIGUSR1's name, once asked to stop at the checkpoint
        self.stop_at = None  # the agreed last step, once any worker asked
        self._why = None  # the stop's reason, for the loop
        self._agreed = set()  # which requests ("now", "checkpoint") the sums carried
        self._sent = 0
        self._previous = {}

    def before_train(self, loop):
        super().before_train(loop)
        try:
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
            self._previous[AT_CHECKPOINT_SIGNAL] = signal.signal(AT_CHECKPOINT_SIGNAL,
                                                                 self._handle_at_checkpoint)
        except ValueError:  # not the main thread: signals stay as they were
            self._previous.clear()

    def _handle(self, signum, frame):
        del frame
        name = signal.Signals(signum).name
        if self.received is not None or self.loop.stop_reason is not None:
            print(f"towertrain: received {name} again: exiting now", file=sys.stderr,
                  flush=True)
            os._exit(128 + signum)
        self.received = name
        print(f"towertrain: received {name}: every worker stops at the same step (a second "
              "signal exits at once)", file=sys.stderr, flush=True)

    def _handle_at_checkpoint(self, signum, frame):
        name = signal.Signals(signum).name
        if not self.save_steps:
            print(f"towertrain: received {name}: no --save_model_steps, so no periodic "
                  "checkpoint to stop at; stopping now instead", file=sys.stderr, flush=True)
            self._handle(signum, frame)
            return
        if self.at_checkpoint is None:
            self.at_checkpoint = name
            print(f"towertrain: received {name}: every worker stops right after the next "
                  f"checkpoint (--save_model_steps={self.save_steps})", file=sys.stderr,
                  flush=True)

    def before_step(self, step):
        request = ((1 if self.received is not None else 0)
                   + (AT_CHECKPOINT if self.at_checkpoint is not None else 0))
        if request != self._sent:
            self.handles.stop_request.assign(request)  # read by the next step's collective
            self._sent = request

    def after_step(self, step, result, seconds):
        requests = result.extras.get("stop_requests", 0)
        # The staged batches are trained on first; every worker stages the
        # same depth, so the stop is the same step everywhere.
        staged = step + self.handles.staging_depth
        if requests % AT_CHECKPOINT and "now" not in self._agreed:
            self._agreed.add("now")
            self._stop_at(staged, self.received or OTHER_WORKER)
        if requests >= AT_CHECKPOINT and "checkpoint" not in self._agreed:
            self._agreed.add("checkpoint")
            # The first periodic checkpoint the staged batches allow (where
            # the chief saves anyway: CheckpointSaver fences there).
            boundary = (-(-staged // self.save_steps) * self.save_steps if self.save_steps
                        else staged)
            self._stop_at(boundary, f"{self.at_checkpoint or OTHER_WORKER}, a stop at the "
                          "next checkpoint")
        if self.stop_at is not None and step >= self.stop_at:
            self.loop.request_stop(self._why)

    def _stop_at(self, step, why):
        step = min(step, self.loop.total_steps)
        if self.stop_at is None or step < self.stop_at:
            self.stop_at, self._why = step, why
            self.handles.add_fence(step)

    def after_train(self):
        if self.loop.stop_reason and self.stop_at is not None:
            saved = ("the chief saves" if self.train_dir else
                     "no --train_dir, nothing saved")
            self.write(f"Stopped at step {self.loop.step} with every worker "
                       f"({self.loop.stop_reason}; {saved})")

    def close(self):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
