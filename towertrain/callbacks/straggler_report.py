"""Which worker holds the others back (multi-worker): every --display_every
steps the chief compares the workers' time to reach the exchange and names
one that is late by more than --straggler_threshold of the step, with the
kind of delay: waiting on its input, or computing slowly.

The all-reduce makes every worker's step time equal, so the step time cannot
tell a slow worker from one waiting for it. Each step measures, per worker,
the seconds from its start until its towers' gradients exist (the exchange
begins) and until its input was ready; the step's tail carries every
worker's pair in the collective it already makes
(towertrain.engine.exchange.tail.timing_values), so every worker holds all
of them and the chief reads them from the step's extras. Each worker's
median over the window is compared with the median of the other workers':
medians, so one step's hiccup (a core taken for a moment) names no one.

With summaries on (--summary_verbosity >= 1) each window's per-worker
medians also go to the event files at the window's last step, one curve per
task: stragglers/reach_exchange_ms/task_K (start of the step to the start of
the exchange) and stragglers/input_wait_ms/task_K.
"""
import statistics

from towertrain import private_api
from towertrain.engine.step.step_outputs import WORKER_TIMING

from .base import Callback

# Below this the lateness is noise on any machine (a scheduler's time slice).
MIN_LATE_SECONDS = 0.005


class StragglerReport(Callback):
    """cluster: the run's (towertrain.config.cluster_spec.Cluster);
    every: steps per report window; threshold: how late, as a fraction of
    the step's median time, names a worker; on_window(step, scalars): gets
    each window's per-worker medians by summary tag (Summaries.extra_scalars),
    or None."""

    def __init__(self, cluster, every, threshold, write=print, on_window=None):
        self.cluster = cluster
        self.on_window = on_window
        self.every = max(int(every), 1)
        self.threshold = threshold
        self.write = write
        self._window = []  # (step seconds, [reach, wait] per worker) per step
        self._first = None
        self.reports = []  # (first step, last step, task or None, kind or None)

    def header_info(self):
        if private_api.op_determinism_enabled():
            return [("Stragglers", "not reported: op determinism refuses the step's "
                                   "timestamps (TF_DETERMINISTIC_OPS)")]
        return [("Stragglers", f"named every {self.every} steps when a worker reaches the "
                               f"exchange later than the others' median by more than "
                               f"{self.threshold:g} of the step (--straggler_threshold)")]

    def after_step(self, step, result, seconds):
        timing = result.extras.get(WORKER_TIMING)
        if timing is None:
            return  # op determinism: no timestamps, no report
        if self._first is None:
            self._first = step
        pairs = [(timing[2 * k], timing[2 * k + 1]) for k in range(len(timing) // 2)]
        self._window.append((seconds, pairs))
        if len(self._window) >= self.every:
            self._report(step)

    def _report(self, last):
        window, first = self._window, self._first
        self._window, self._first = [], None
        workers = len(window[0][1])
        reach = [statistics.median(pairs[k][0] for _, pairs in window) for k in range(workers)]
        wait = [statistics.median(pairs[k][1] for _, pairs in window) for k in range(workers)]
        compute = [r - w for r, w in zip(reach, wait)]
        if self.on_window is not None:
            self.on_window(last, window_scalars(reach, wait))
        step = statistics.median(seconds for seconds, _ in window)
        slowest = max(range(workers), key=lambda k: reach[k])
        others = [k for k in range(workers) if k != slowest]

        def usual(values):  # the median of the other workers
            return statistics.median(values[k] for k in others)
        late = reach[slowest] - usual(reach)
        if late <= max(self.threshold * step, MIN_LATE_SECONDS):
            self.reports.append((first, last, None, None))
            return
        more_wait = wait[slowest] - usual(wait)
        more_compute = compute[slowest] - usual(compute)
        if more_wait >= more_compute:
            kind, detail = "input", (f"waited on its input {wait[slowest] * 1e3:.1f} ms, the "
                                     f"others' median {usual(wait) * 1e3:.1f} ms")
        else:
            kind, detail = "compute", (
                f"computed {compute[slowest] * 1e3:.1f} ms, the others' median "
                f"{usual(compute) * 1e3:.1f} ms")
        self.reports.append((first, last, slowest, kind))
        self.write(f"Straggler: {self.cluster.describe(slowest)} reached the exchange "
                   f"{late * 1e3:.1f} ms after the others' median in steps {first}-{last} "
                   f"(median step {step * 1e3:.1f} ms): slow {kind} ({detail})")


def window_scalars(reach, wait):
    """A window's per-worker medians (seconds) as summary scalars in ms."""
    scalars = {}
    for task, (reached, waited) in enumerate(zip(reach, wait)):
        scalars[f"stragglers/reach_exchange_ms/task_{task}"] = reached * 1e3
        scalars[f"stragglers/input_wait_ms/task_{task}"] = waited * 1e3
    return scalars
