"""TensorBoard event files (tf.summary) every --save_summaries_steps.

Tags, at the global step (so a resumed run continues the same curves):

    --summary_verbosity=1  loss, learning_rate, images_per_sec, gradient_norm,
                           loss_scale (with a loss scale), accuracy/top1
                           (training top-1 of the step, classifiers),
                           input_wait_share
    --summary_verbosity=2  + gradients/<variable path> histograms
    --summary_verbosity=3  + weights/<variable path> histograms
    multi-worker           stragglers/reach_exchange_ms/task_K and
                           stragglers/input_wait_ms/task_K every --display_every
                           steps (towertrain.callbacks.straggler_report)
    eval during training   accuracy/top1, accuracy/top5 in the eval/ subfolder,
                           so TensorBoard draws train and eval top-1 in one chart
    --eval (standalone)    the same two eval/ tags at the checkpoint's global
                           step (write_eval_result), with --summary_verbosity>=1

images_per_sec and input_wait_share cover the timed steps since the previous
summary (the warm-up steps are left out, as on the step lines).

A step is never written twice: within a run, and across a resume. A run killed
after writing summaries past its last checkpoint resumes from that checkpoint
and trains those steps again; their summaries are already in the folder, so
the resumed run writes only steps after the last one written (it reads the
newest event file with summaries, in the folder and in eval/). The curves keep
the interrupted run's values for those few steps. A run that starts at step 0
in a folder with older events writes all its steps, and says so.

The summaries are written with tf.summary.write and TensorBoard's own formats
(the scalars and histograms plugins), so no tensorboard package is needed to
write them (TF 2.21's tf.summary.scalar/histogram need it installed).
"""
import os

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import summary_pb2
from tensorflow.core.util import event_pb2

from towertrain.engine.run import benchmark_log
from towertrain.engine.step import step_outputs
from towertrain.plan.steps import warmup_fence, warmup_of_run

from .base import Callback

EVAL_SUBDIR = "eval"
HISTOGRAM_BUCKETS = 30  # TensorBoard's default


def _metadata(plugin, data_class):
    return summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=plugin),
        data_class=data_class).SerializeToString()


SCALAR_METADATA = _metadata("scalars", summary_pb2.DATA_CLASS_SCALAR)
HISTOGRAM_METADATA = _metadata("histograms", summary_pb2.DATA_CLASS_TENSOR)


def write_scalar(tag, value):
    """tf.summary.scalar's event, into the default writer at its step."""
    tf.summary.write(tag, tf.constant(float(value), tf.float32), metadata=SCALAR_METADATA)


def histogram_buckets(values, bucket_count=HISTOGRAM_BUCKETS):
    """TensorBoard's histogram tensor: [bucket_count, 3] (left edge, right
    edge, count) over the finite values, equal-width buckets from min to max."""
    data = np.asarray(values, np.float64).reshape(-1)
    data = data[np.isfinite(data)]
    if data.size == 0:
        return np.zeros((0, 3))
    low, high = data.min(), data.max()
    if low == high:  # one value: all in the first bucket, as TensorBoard does
        counts = np.zeros(bucket_count)
        counts[0] = data.size
        return np.stack([np.full(bucket_count, low), np.full(bucket_count, low), counts], 1)
    counts, edges = np.histogram(data, bins=bucket_count, range=(low, high))
    return np.stack([edges[:-1], edges[1:], counts.astype(np.float64)], 1)


def write_histogram(tag, values):
    """tf.summary.histogram's event, into the default writer at its step."""
    tf.summary.write(tag, tf.constant(histogram_buckets(values)), metadata=HISTOGRAM_METADATA)


def eval_folder(logdir):
    """Where eval results go: the eval/ subfolder of the summary folder."""
    return os.path.join(logdir, EVAL_SUBDIR)


def write_eval_scalars(result):
    """An EvalResult's top-1 and top-5, into the default writer at its step."""
    write_scalar("accuracy/top1", result.top1)
    write_scalar("accuracy/top5", result.top5)


def write_eval_result(logdir, step, result):
    """A standalone --eval's result: the tags eval during training writes, in
    logdir/eval at the checkpoint's global step, so it lands on the run's chart."""
    writer = tf.summary.create_file_writer(eval_folder(logdir))
    try:
        with writer.as_default(step=step):
            write_eval_scalars(result)
        writer.flush()
    finally:
        writer.close()


def last_written_step(directory):
    """The highest step of a summary in the newest event file of `directory`
    that has any (0: none). A file cut short by a kill is read up to the cut."""
    paths = tf.io.gfile.glob(os.path.join(directory, "events.out.tfevents.*"))
    for path in sorted(paths, key=lambda p: (os.path.getmtime(p), p), reverse=True):
        steps = []
        try:
            for record in tf.data.TFRecordDataset(path):
                event = event_pb2.Event.FromString(record.numpy())
                if event.HasField("summary") and event.summary.value:
                    steps.append(event.step)
        except tf.errors.DataLossError:
            pass  # a truncated last record: the events before it count
        if steps:
            return max(steps)
    return 0


class Summaries(Callback):
    """Writes the summaries of a run into `logdir` (and logdir/eval).

    handles: the run's RunHandles (global_step, learning_rate, model,
    variables); num_warmup_batches: the plan's warmup steps (untimed)."""

    def __init__(self, handles, logdir, verbosity=1, every_n_steps=100,
                 num_warmup_batches=0):
        self.handles = handles
        self.num_warmup_batches = num_warmup_batches
        self.logdir = logdir
        self.verbosity = verbosity
        self.every_n_steps = every_n_steps
        self._writers = {}
        self._last = None  # per folder: the last step written (skip up to it)
        self._written_before = 0  # the last train step an interrupted run wrote
        self._note = None
        self.times = benchmark_log.StepTimes()
        self.wait = benchmark_log.WaitShare()
        self._steps_run = 0
        self._warmup = 0
        self._warmup_asks = {}

    def _prepare(self):
        """Reads what earlier runs wrote, once, before the header is printed."""
        if self._last is not None:
            return
        start = self.handles.global_step()
        written = {name: last_written_step(self._folder(name)) for name in ("train", "eval")}
        last = max(written.values())
        if start and last > start:  # resumed behind summaries already written
            self._last = written
            self._written_before = written["train"]
            self._note = (f"steps {start + 1}..{last} were written by the interrupted "
                          "run; continuing after them")
        else:
            self._last = {"train": 0, "eval": 0}
            if last:
                self._note = (f"already holds events up to step {last} from an earlier "
                              f"run; this one starts at step {start}")

    def header_info(self):
        self._prepare()
        text = f"{self.logdir} (verbosity {self.verbosity}, every {self.every_n_steps} steps)"
        return [("Summaries", [text, self._note] if self._note else text)]

    def before_train(self, loop):
        super().before_train(loop)
        self._prepare()
        self._warmup = warmup_of_run(self.num_warmup_batches, loop.start_step,
                                     loop.total_steps)
        self._warmup_asks = self._plan_warmup(loop.start_step, loop.total_steps)

    def _folder(self, name):
        return self.logdir if name == "train" else os.path.join(self.logdir, EVAL_SUBDIR)

    def _writer(self, name):
        if name not in self._writers:
            self._writers[name] = tf.summary.create_file_writer(self._folder(name))
        return self._writers[name]

    def _due(self, step):
        return step % self.every_n_steps == 0 and step > self._last["train"]

    def step_outputs(self, step):
        level = step_outputs.GRADIENTS if self.verbosity >= 2 else step_outputs.GRAD_NORM
        if self._due(step) or self._warmup_asks.get(step, False):
            return level
        return step_outputs.SCALARS

    def _plan_warmup(self, start, total):
        """{warm-up step: whether it asks for the summaries' outputs}, so each
        variant of the step function the timed steps will run is first
        called untimed: a first call optimizes the graph (~2 s for resnet20 on
        2 CPU devices, measured), which in a timed step understated the run's
        total images/sec. A variant is (drains only, outputs); with staging
        the step of the warm-up fence (plan.steps.warmup_fence, which
        FeedPosition.begin adds) drains, as does the run's last step. Due steps ask
        anyway; each other warm-up step takes the first
        variant of its kind still missing, plain before outputs."""
        warmup = self._warmup
        staged = self.handles.staging_depth > 0
        drains = {total, warmup_fence(start, warmup)} if staged else set()

        def kind(step):
            return "drain" if step in drains else "step"

        first_timed = start + warmup + 1
        needed = set()
        if first_timed < total:
            needed.add(("step", False))
            if self._any_due(first_timed, total - 1):
                needed.add(("step", True))
        if first_timed <= total:
            needed.add((kind(total), self._due(total)))
        warmup_steps = range(start + 1, start + warmup + 1)
        covered = {(kind(step), True) for step in warmup_steps if self._due(step)}
        asks = {}
        for step in warmup_steps:
            if self._due(step):
                continue
            missing = [(kind(step), outputs) for outputs in (False, True)
                       if (kind(step), outputs) in needed - covered]
            asks[step] = bool(missing) and missing[0][1]
            covered.add((kind(step), asks[step]))
        return asks

    def _any_due(self, first, last):
        """Whether a summary is due at a step in first..last."""
        first = max(first, self._last["train"] + 1)
        due = -(-first // self.every_n_steps) * self.every_n_steps
        return due <= last

    def after_step(self, step, result, seconds):
        self._steps_run += 1
        if self._steps_run > self._warmup:
            self.times.add(result.examples, seconds)
            if "input_wait_seconds" in result.extras:
                self.wait.add(result.extras["input_wait_seconds"], seconds)
        if step % self.every_n_steps:
            return
        speed = self.times.total_images_per_sec() if self.times else None
        share = self.wait.take()
        self.times = benchmark_log.StepTimes()
        if step <= self._last["train"]:
            return
        self._write_train(step, result, speed, share)
        self._last["train"] = step

    def _write_train(self, step, result, speed, share):
        extras = result.extras
        scalars = {"loss": result.loss,
                   "learning_rate": self.handles.learning_rate.value_at(step - 1),
                   "images_per_sec": speed, "input_wait_share": share,
                   "gradient_norm": extras.get("grad_norm"),
                   "loss_scale": extras.get("loss_scale"),
                   "accuracy/top1": extras.get("top1")}
        model = self.handles.model
        with self._writer("train").as_default(step=step):
            for tag, value in scalars.items():
                if value is not None:
                    write_scalar(tag, value)
            if self.verbosity >= 2 and "gradients" in extras:
                for variable, grad in zip(model.trainable_variables, extras["gradients"]):
                    write_histogram(f"gradients/{variable.path}", grad)
            if self.verbosity >= 3:
                trainable, non_trainable = self.handles.variables.primary_variables()
                for variable, value in zip(
                        model.trainable_variables + model.non_trainable_variables,
                        list(trainable) + list(non_trainable)):
                    write_histogram(f"weights/{variable.path}", tf.convert_to_tensor(value))
        self._writer("train").flush()

    def eval_result(self, step, result):
        """PeriodicEval's hook: top-1/top-5 under eval/ at the global step."""
        self._prepare()
        if step <= self._last["eval"]:
            return
        with self._writer("eval").as_default(step=step):
            write_eval_scalars(result)
        self._writer("eval").flush()
        self._last["eval"] = step

    def extra_scalars(self, step, scalars):
        """Another callback's scalars ({tag: value}) in the train folder at
        `step` (the straggler report's windows), skipped up to the steps an
        interrupted run already wrote."""
        self._prepare()
        if step <= self._written_before:
            return
        with self._writer("train").as_default(step=step):
            for tag, value in scalars.items():
                write_scalar(tag, value)
        self._writer("train").flush()

    def close(self):
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
