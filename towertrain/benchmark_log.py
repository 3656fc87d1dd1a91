"""tf_cnn_benchmarks-style output: the header block, step lines, the total."""
import statistics
import time


def header_lines(info):
    """info: ordered (label, value) pairs; a list value continues on indented lines."""
    lines = []
    for label, value in info:
        values = value if isinstance(value, list) else [value]
        lines.append(f"{label + ':':<13}{values[0]}")
        lines.extend(f"{'':<13}{v}" for v in values[1:])
    lines.append("==========")
    return lines


def speed_stats(images_per_step, step_times):
    """(mean, uncertainty, jitter) of images/sec over the timed steps.

    Uncertainty is the standard error of the mean; jitter is the scaled median
    absolute deviation, as tf_cnn_benchmarks reports them.
    """
    speeds = [images_per_step / t for t in step_times]
    mean = statistics.fmean(speeds)
    if len(speeds) < 2:
        return mean, 0.0, 0.0
    uncertainty = statistics.stdev(speeds) / len(speeds) ** 0.5
    median = statistics.median(speeds)
    jitter = 1.4826 * statistics.median(abs(s - median) for s in speeds)
    return mean, uncertainty, jitter


class StepLogger:
    """Times steps after warmup and prints a line every `display_every` steps."""

    def __init__(self, images_per_step, display_every, write=print):
        self.images_per_step = images_per_step
        self.display_every = display_every
        self.write = write
        self.step_times = []
        self._start = None
        self._last = None

    def start(self):
        self.write("Step\tImg/sec\ttotal_loss")
        self._start = self._last = time.perf_counter()

    def step_done(self, loss):
        now = time.perf_counter()
        self.step_times.append(now - self._last)
        self._last = now
        step = len(self.step_times)
        if step == 1 or step % self.display_every == 0:
            mean, uncertainty, jitter = speed_stats(self.images_per_step, self.step_times)
            self.write(f"{step}\timages/sec: {mean:.1f} +/- {uncertainty:.1f} "
                       f"(jitter = {jitter:.1f})\t{loss:.3f}")

    def exclude_pause(self):
        """Leaves the time since the last step (an eval, a save) out of the step
        times and the total, as tf_cnn_benchmarks reports training speed."""
        if self._last is None:
            return
        now = time.perf_counter()
        self._start += now - self._last
        self._last = now

    def total_images_per_sec(self):
        elapsed = self._last - self._start
        return len(self.step_times) * self.images_per_step / elapsed if elapsed > 0 else 0.0

    def finish(self):
        rule = "-" * 64
        total = self.total_images_per_sec()
        self.write(rule)
        self.write(f"total images/sec: {total:.2f}")
        self.write(rule)
        return total
