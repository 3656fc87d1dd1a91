"""Stops a multi-worker run whose peer died, without a timeout on every collective.

A `timeout_seconds` on a collective makes TensorFlow keep one sleeping thread
for the whole timeout (tensorflow/tensorflow#62466; "TODO: share the timeout
watchdog thread among collectives" in base_collective_executor.cc). A step
runs several collectives per device, so a fast model on a 60 s timeout held
tens of thousands of threads and the process aborted ("Resource temporarily
unavailable", measured with the trivial model: ~1,300 threads a second).

So the step's collectives carry no timeout. Instead one thread per process
asks every peer's collective runtime whether it is alive
(`check_collective_ops_peer_health`, what MultiWorkerMirroredStrategy does) and,
once a peer stays unreachable, aborts this process's collectives: the blocked
step raises UnavailableError with a message naming the peer. It starts after
the start-up broadcast, when every peer has joined (a late peer is then no
failure), and stops with the trainer, before the workers exit one by one.
"""
import atexit
import threading

import tensorflow as tf

from towertrain import private_api

# A peer is given up after this many failed checks in a row, each check
# waiting up to a share of --collective_timeout_secs, so a dead peer stops the
# run within about that timeout.
FAILED_CHECKS = 3


class PeerWatch:
    """One thread checking `cluster`'s other tasks every `check_timeout`
    seconds, each check waiting up to as long: FAILED_CHECKS rounds fit in
    the timeout."""

    def __init__(self, cluster, timeout_secs):
        self.cluster = cluster
        self.check_timeout = max(timeout_secs / (2 * FAILED_CHECKS), 0.5)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="towertrain-peer-watch",
                                        daemon=True)
        self.failure = None  # the message the collectives were aborted with

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2 * self.check_timeout + 1)

    def _run(self):
        failed = {}
        while not self._stop.wait(self.check_timeout):
            for index in range(self.cluster.num_workers):
                if index == self.cluster.task_index or self._stop.is_set():
                    continue
                try:
                    private_api.eager_context().check_collective_ops_peer_health(
                        self.cluster.task_name(index),
                        timeout_in_ms=int(self.check_timeout * 1000))
                    failed.pop(index, None)
                except (tf.errors.UnavailableError, tf.errors.DeadlineExceededError,
                        tf.errors.FailedPreconditionError) as err:
                    # FailedPrecondition: the peer restarted, so it is another task.
                    failed[index] = failed.get(index, 0) + 1
                    if failed[index] >= FAILED_CHECKS and not self._stop.is_set():
                        self._abort(index, err)
                        return

    def _abort(self, index, err):
        detail = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        self.failure = (f"{self.cluster.describe(index)} stopped answering "
                        f"({FAILED_CHECKS} health checks failed: {detail})")
        private_api.eager_context().abort_collective_ops(tf.errors.UNAVAILABLE, self.failure)


_WATCH = {"current": None}


def start(cluster, timeout_secs):
    """Starts the process's watch of `cluster` (once; again after stop())."""
    if cluster.num_workers < 2 or _WATCH["current"] is not None:
        return _WATCH["current"]
    _WATCH["current"] = PeerWatch(cluster, timeout_secs).start()
    return _WATCH["current"]


def stop():
    """Stops the watch: the run's last collective is done, and peers that exit
    from now on are no failure."""
    watch, _WATCH["current"] = _WATCH["current"], None
    if watch is not None:
        watch.stop()


# Before the interpreter tears down: a daemon thread calling into TensorFlow then
# could crash the exit of a run that never called Trainer.close().
atexit.register(stop)
