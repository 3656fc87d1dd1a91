"""SIGINT/SIGTERM: the first stops the run cleanly, a second exits at once."""
import os
import signal
import sys

from .base import Callback


class StopOnSignal(Callback):
    """The first SIGINT or SIGTERM asks the loop to stop: the staged batches are
    trained on and, with a CheckpointSaver, a checkpoint is written. A second
    one, while that is under way, exits immediately (status 128 + signal); the
    previous checkpoint is untouched, since a checkpoint becomes the latest
    only once it is completely written."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, saves_on_stop, write=print):
        self.saves_on_stop = saves_on_stop
        self.write = write
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
        if self.loop.stop_reason is not None:
            print(f"towertrain: received {name} again: exiting now", file=sys.stderr,
                  flush=True)
            os._exit(128 + signum)
        self.loop.request_stop(name)

    def after_train(self):
        if self.loop.stop_reason and not (self.saves_on_stop or self.loop.stop_is_final):
            self.write(f"Received {self.loop.stop_reason}: stopping at step {self.loop.step} "
                       "(no --train_dir, nothing saved)")

    def close(self):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
