"""SIGINT/SIGTERM: the first stops the run cleanly, a second exits at once.

Python runs a signal handler only when the main thread returns to the
interpreter, which a long step (one TensorFlow call that can last minutes)
or a long trace does not do; and two signals that arrive before the handler
runs count as one. So the signals are taken from signal.set_wakeup_fd: the
C-level handler writes one byte per signal to a socket, and a watcher thread
reads it at once, whatever the main thread is doing.
"""
import os
import signal
import socket
import sys
import threading

from .base import Callback


class StopOnSignal(Callback):
    """The first SIGINT or SIGTERM is acknowledged on stderr at once and asks the
    loop to stop: the staged batches are trained on and, with a CheckpointSaver,
    a checkpoint is written. A second one exits immediately (status 128 +
    signal), even in the middle of a step; the previous checkpoint is untouched,
    since a checkpoint becomes the latest only once it is completely written.

    exit: how a second signal ends the process (tests replace os._exit)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, saves_on_stop, write=print, exit=os._exit):  # noqa: A002
        self.saves_on_stop = saves_on_stop
        self.write = write
        self.exit = exit
        self._previous = {}
        self._previous_fd = None
        self._sockets = None
        self._watcher = None
        self._received = 0

    def before_train(self, loop):
        super().before_train(loop)
        if threading.current_thread() is not threading.main_thread():
            return  # signals can only be taken in the main thread: they stay as they were
        reader, writer = socket.socketpair()
        writer.setblocking(False)  # the C handler must never block
        self._sockets = (reader, writer)
        for sig in self.SIGNALS:
            # The Python-level handler only keeps the default one (KeyboardInterrupt,
            # termination) away; the watcher does the work.
            self._previous[sig] = signal.signal(sig, _ignore)
        self._previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        self._watcher = threading.Thread(target=self._watch, args=(reader,),
                                         name="towertrain-signals", daemon=True)
        self._watcher.start()

    def _watch(self, reader):
        while True:
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data:
                return  # close(): the writer is gone
            for signum in data:
                if signum in self.SIGNALS:
                    self._handle(signum)

    def _handle(self, signum):
        name = signal.Signals(signum).name
        self._received += 1
        if self._received > 1:
            _say(f"towertrain: received {name} again: exiting now (status {128 + signum})")
            sys.stdout.flush()
            self.exit(128 + signum)
            return
        then = ("saving a checkpoint" if self.saves_on_stop else "nothing is saved "
                "(no --train_dir)")
        _say(f"towertrain: received {name}: stopping after the current step ({then}); "
             f"send it again to exit at once")
        self.loop.request_stop(name)

    def after_train(self):
        if self.loop.stop_reason and not (self.saves_on_stop or self.loop.stop_is_final):
            self.write(f"Received {self.loop.stop_reason}: stopping at step {self.loop.step} "
                       "(no --train_dir, nothing saved)")

    def close(self):
        if self._sockets is not None:
            signal.set_wakeup_fd(self._previous_fd if self._previous_fd is not None else -1)
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)
            reader, writer = self._sockets
            writer.close()  # the watcher reads end-of-file and returns
            self._watcher.join(timeout=5)
            reader.close()
            self._sockets = None
        self._previous.clear()


def _ignore(signum, frame):
    del signum, frame


def _say(line):
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr closed: the action matters more than the line
        pass
