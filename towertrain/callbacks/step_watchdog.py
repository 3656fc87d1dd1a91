"""The step watchdog as a callback (towertrain.engine.run.watchdog): armed
right before each step runs, off while the other callbacks work (saves, eval)."""
from towertrain.engine.run import exchange_marks
from towertrain.engine.run import watchdog as watchdog_lib
from towertrain.state import checkpoint as ckpt_lib

from .base import Callback


class StepWatchdog(Callback):
    """Ends a process whose step has run far longer than its steps so far.

    timeout: --step_timeout_secs (None: 10x the slowest step after warm-up,
    at least 5 minutes; 0: off); warmup: the run's warm-up steps; train_dir:
    named at firing, with its latest checkpoint (what a restart resumes);
    cluster: multi-worker, the run's, whose tasks that never reached a hung
    step's exchange the line names (None: one process)."""

    def __init__(self, timeout=None, warmup=0, train_dir=None, exit=None, cluster=None):
        self.warmup = warmup
        self.train_dir = train_dir
        options = {} if exit is None else {"exit": exit}
        if cluster is not None and cluster.num_workers > 1:
            options["marks"] = exchange_marks.ExchangeMarks(
                cluster, exchange_marks.folder_for(cluster, train_dir))
        self.watchdog = watchdog_lib.Watchdog(timeout, where=self._where, **options)

    def _where(self):
        if not self.train_dir:
            return " (no --train_dir: it starts over)"
        latest = ckpt_lib.latest(self.train_dir)
        return (f" from {latest}, the last checkpoint" if latest else
                f" (no checkpoint in --train_dir={self.train_dir} yet: it starts over)")

    def before_step(self, step):
        self.watchdog.started(step)

    def after_step(self, step, result, seconds):
        # The first step of a process traces the step function: never the measure.
        self.watchdog.finished(seconds, step - self.loop.start_step > max(self.warmup, 1))

    def close(self):
        self.watchdog.close()
