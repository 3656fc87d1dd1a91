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

A second signal exits at once (status 128 + signal), as on one process.
A crashed or killed worker is not a stop request: the others fail their next
collective within --collective_timeout_secs, as before.
"""
import os
import signal
import sys

from .base import Callback

OTHER_WORKER = "a stop request from another worker"


class ClusterStop(Callback):
    """Stops every worker of a multi-worker run at one step on a signal.

    handles: the run's RunHandles (stop_request, staging_depth, add_fence);
    train_dir: --train_dir, for the last line (where the chief saves)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, handles, write=print, train_dir=None):
        self.handles = handles
        self.write = write
        self.train_dir = train_dir
        self.received = None  # the signal this worker got, by name
        self.stop_at = None  # the agreed last step, once any worker asked
        self._sent = False
        self._previous = {}

    def before_train(self, loop):
        super().before_train(loop)
        try:
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
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

    def before_step(self, step):
        if self.received is not None and not self._sent:
            self.handles.stop_request.assign(1)  # read by the next step's collective
            self._sent = True

    def after_step(self, step, result, seconds):
        if self.stop_at is None and result.extras.get("stop_requests", 0) > 0:
            # The staged batches are trained on first; every worker stages the
            # same depth, so the fence is the same step everywhere.
            self.stop_at = min(step + self.handles.staging_depth, self.loop.total_steps)
            self.handles.add_fence(self.stop_at)
        if self.stop_at is not None and step >= self.stop_at:
            self.loop.request_stop(self.received or OTHER_WORKER)

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
