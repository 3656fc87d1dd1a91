"""tf_cnn_benchmarks-style output: the header block, step lines, the total."""
import statistics

from towertrain.plan import describe


def header_lines(info):
    """info: ordered (label, value) pairs; a list value continues on indented lines."""
    lines = []
    for label, value in info:
        values = value if isinstance(value, list) else [value]
        lines.append(f"{label + ': ':<13}{values[0]}")  # a long label keeps a space
        lines.extend(f"{'':<13}{v}" for v in values[1:])
    lines.append("==========")
    return lines


def resumed_num_batches(start_step, total_steps, warmup):
    """The 'Num batches' of a run resumed after `start_step`: the steps this
    process runs and times, not the plan's from step 0 (warmup: the untimed
    steps it runs first)."""
    remaining = total_steps - start_step
    return [f"{remaining - warmup} timed",
            f"of the {remaining} steps left (steps {start_step + 1}-{total_steps}, resumed "
            f"after step {start_step}; {describe.warmup_phrase(warmup)})"]


def with_resumed_counts(info, start_step, total_steps, warmup):
    """The header's (label, value) pairs with 'Num batches' counting what a
    resumed run runs; unchanged for a run from step 0 or one already done."""
    if start_step <= 0 or start_step >= total_steps:
        return list(info)
    return [(label, resumed_num_batches(start_step, total_steps, warmup)
             if label == "Num batches" else value) for label, value in info]


def speed_stats(speeds):
    """(mean, uncertainty, jitter) of per-step images/sec.

    Uncertainty is the standard error of the mean; jitter is the scaled median
    absolute deviation, as tf_cnn_benchmarks reports them.
    """
    mean = statistics.fmean(speeds)
    if len(speeds) < 2:
        return mean, 0.0, 0.0
    uncertainty = statistics.stdev(speeds) / len(speeds) ** 0.5
    median = statistics.median(speeds)
    jitter = 1.4826 * statistics.median(abs(s - median) for s in speeds)
    return mean, uncertainty, jitter


def ewma_speed(examples, seconds, alpha):
    """tf_cnn_benchmarks' --display_perf_ewma: images/sec from step times
    averaged with weight (1 - alpha)^age (the newest step has age 0)."""
    weights = [(1 - alpha) ** age for age in range(len(seconds) - 1, -1, -1)]
    time_mean = sum(w * t for w, t in zip(weights, seconds))
    examples_mean = sum(w * n for w, n in zip(weights, examples))
    return examples_mean / time_mean if time_mean > 0 else 0.0


class StepTimes:
    """Examples and seconds of the timed steps. A step counts the examples it
    really trained on (a partial batch counts as its size), and only the time
    of the step itself, so evals and saves between steps are left out."""

    def __init__(self, ewma=None):
        self.examples = []
        self.seconds = []
        self.ewma = ewma  # --display_perf_ewma: weight of the newest step

    def add(self, examples, seconds):
        self.examples.append(examples)
        self.seconds.append(seconds)

    def __len__(self):
        return len(self.seconds)

    def step_line(self, step, loss, top1=None, wait_share=None):
        """tf_cnn_benchmarks' line (step, images/sec, loss), then the training
        top-1 when given and the input-wait share when given ('wait 37%')."""
        speeds = [n / t for n, t in zip(self.examples, self.seconds)]
        mean, uncertainty, jitter = speed_stats(speeds)
        if self.ewma:
            mean = ewma_speed(self.examples, self.seconds, self.ewma)
        line = (f"{step}\timages/sec: {mean:.1f} +/- {uncertainty:.1f} "
                f"(jitter = {jitter:.1f})\t{loss:.3f}")
        if top1 is not None:
            line += f"\t{top1:.3f}"
        if wait_share is not None:
            line += f"\twait {wait_share:.0%}"
        return line

    def total_images_per_sec(self):
        elapsed = sum(self.seconds)
        return sum(self.examples) / elapsed if elapsed > 0 else 0.0


class WaitShare:
    """The share of step time spent waiting for input over an interval of steps:
    the sum of their 'input_wait_seconds' over the sum of their seconds."""

    def __init__(self):
        self.wait = 0.0
        self.seconds = 0.0

    def add(self, wait_seconds, seconds):
        self.wait += wait_seconds
        self.seconds += seconds

    def take(self):
        """The share since the last take() (None if no time passed); starts anew."""
        share = min(max(self.wait / self.seconds, 0.0), 1.0) if self.seconds > 0 else None
        self.wait = self.seconds = 0.0
        return share


def total_lines(images_per_sec):
    rule = "-" * 64
    return [rule, f"total images/sec: {images_per_sec:.2f}", rule]
