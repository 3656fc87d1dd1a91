"""Top-1/top-5 accuracy over a whole eval split, on any number of devices.

Each batch of a finite eval set (input_pipeline EvalData) is split on the CPU
over the towers (uneven splits and an uneven last batch included); each tower
runs the model in inference mode, and the counts are summed on the CPU. Every
example is counted exactly once: a count that differs from the split's size is
an error. The split is always named in the output ('synthetic' for random data,
which is only used when no --data_dir was given).
"""
import collections
import time

import numpy as np
import tensorflow as tf

from towertrain.engine.contract import up_front
from towertrain.engine.evaluation import eval_amount
from towertrain.engine.step import model_call
from towertrain.input_pipeline import split_to_devices
from towertrain.input_pipeline.arrays import InputError
from towertrain.input_pipeline.base import EvalData, NoEvalSplitError

EvalResult = collections.namedtuple(
    "EvalResult", "top1 top5 num_examples images_per_sec description logits")
# What an evaluation counted (correct top-1 and top-5, examples), before the
# split's checks: a worker's share of it, or the cluster's sum.
Tally = collections.namedtuple("Tally", "correct1 correct5 count images_per_sec logits")


class Evaluator:
    """Evaluates a variable manager's variables with `model` on `devices`.

    Synchronous modes evaluate every tower's (identical) copy where it lives;
    `independent` copies differ, so every tower reads tower 0's copy.
    """

    def __init__(self, model, variables, devices):
        self.model = model
        self.manager = variables
        self.devices = list(devices)
        self.tower0_only = not self.manager.synchronous
        self._batch_fn = tf.function(self._eval_batch, autograph=False)

    def _tower_variables(self, tower):
        if self.tower0_only:
            trainable, non_trainable = self.manager.primary_variables()
            return [tf.identity(v.value) for v in trainable], [
                tf.identity(v.value) for v in non_trainable]
        return self.manager.tower_inputs(tower)

    def _eval_batch(self, images, labels):
        logits = []
        for i, (device, (tower_images, _)) in enumerate(
                zip(self.devices, split_to_devices((images, labels), self.devices))):
            if tower_images.shape[0] == 0:  # statically empty slice
                continue
            with tf.device(device), tf.name_scope(f"eval_tower_{i}"):
                trainable, non_trainable = self._tower_variables(i)
                out = model_call.call(self.model, trainable, non_trainable, tower_images,
                                      training=False).outputs
                logits.append(tf.cast(out, tf.float32))
        with tf.device("/cpu:0"):
            logits = tf.concat(logits, axis=0) if len(logits) > 1 else tf.identity(logits[0])
            labels = tf.cast(tf.reshape(labels, [-1]), tf.int32)
            k5 = min(5, logits.shape[-1])
            top1 = tf.reduce_sum(tf.cast(tf.math.in_top_k(labels, logits, 1), tf.int64))
            top5 = tf.reduce_sum(tf.cast(tf.math.in_top_k(labels, logits, k5), tf.int64))
            return logits, top1, top5

    def evaluate(self, eval_data, keep_logits=False):
        """eval_data: EvalData (a finite dataset of (images, labels) batches)."""
        return result_of(eval_data, self.tally(eval_data, keep_logits))

    def tally(self, eval_data, keep_logits=False):
        """The counts of eval_data's batches (none is an empty Tally: a worker's
        share may have no batch); result_of checks them against the split."""
        correct1 = correct5 = count = 0
        kept = []
        timed_examples, timed_seconds = 0, 0.0
        began = time.perf_counter()
        iterator = iter(eval_data.dataset)
        while True:
            started = time.perf_counter()
            traces = self._batch_fn.experimental_get_tracing_count()
            batch = next(iterator, None)
            if batch is None:
                break
            images, labels = batch
            check_labels(labels, self.model, eval_data)
            logits, top1, top5 = self._batch_fn(images, labels)
            correct1 += int(top1)
            correct5 += int(top5)
            size = int(labels.shape[0])
            count += size
            if self._batch_fn.experimental_get_tracing_count() == traces:
                # Batches that traced the function (first, last partial) are not speed.
                timed_examples += size
                timed_seconds += time.perf_counter() - started
            if keep_logits:
                kept.append(logits.numpy())
        if not timed_examples:  # every batch traced (a small set): time them all
            timed_examples, timed_seconds = count, time.perf_counter() - began
        speed = timed_examples / timed_seconds if timed_seconds > 0 else 0.0
        return Tally(correct1, correct5, count, speed,
                     np.concatenate(kept) if keep_logits and kept else None)


def check_labels(labels, model, eval_data):
    """A batch's labels against the model's classes, as training checks them:
    one outside them scored 'Accuracy @ 1 = 0.0000' without a word."""
    classes = model.output_shape[-1]
    values = np.asarray(labels).reshape(-1)
    if classes is None or not values.size or not np.issubdtype(values.dtype, np.number):
        return
    low, high = values.min(), values.max()
    if low < 0 or high >= classes:
        raise InputError(up_front.label_range_message(
            low, high, classes, f"the eval set ({eval_data.description})"))


def check_batched(eval_data):
    """An EvalData's dataset yields (images, labels) batches: one of single
    examples failed with TensorFlow's "Can't split scalars"."""
    spec = getattr(eval_data.dataset, "element_spec", None)
    if not (isinstance(spec, tuple) and len(spec) == 2):
        raise InputError(f"EvalData ({eval_data.description}): its dataset must yield "
                         f"(images, labels) batches, not {spec}")
    labels = spec[1]
    if isinstance(labels, tf.TensorSpec) and labels.shape.rank == 0:
        raise InputError(
            f"EvalData ({eval_data.description}): its dataset yields single examples (labels "
            f"of shape (), images of shape {tuple(spec[0].shape)}), not batches; batch it: "
            "EvalData(dataset.batch(N), num_examples, description, N)")


def result_of(eval_data, tally):
    """The EvalResult of a Tally of the whole of eval_data: an InputError if it
    counted no example, or another number than the split holds."""
    if tally.count == 0:
        raise InputError(f"the eval set ({eval_data.description}) is empty")
    if eval_data.num_examples is not None and tally.count != eval_data.num_examples:
        raise InputError(f"the eval set ({eval_data.description}) gave {tally.count} "
                         f"examples, expected {eval_data.num_examples}")
    return EvalResult(tally.correct1 / tally.count, tally.correct5 / tally.count,
                      tally.count, tally.images_per_sec, eval_data.description, tally.logits)


def eval_data_for(input_source, batch_size, outputs, eval_data=None):
    """`eval_data`, else `input_source`'s eval split in batches of `batch_size`
    (the plan's eval batch per process; an error naming what is missing if it
    has none); cut or repeated to the `outputs` section's --num_eval_batches or
    --num_eval_epochs when given (towertrain.engine.evaluation.eval_amount)."""
    if eval_data is None:
        try:
            eval_data = input_source.eval_data(batch_size)
        except NoEvalSplitError as err:
            raise InputError(f"cannot evaluate: {err}") from err
    check_batched(eval_data)
    return eval_amount.limit(eval_data, batch_size, outputs.num_eval_batches,
                             outputs.num_eval_epochs)


def describe(eval_data, evaluator=None):
    """The header value for an eval set: its split and size (and whose copy)."""
    text = f"{eval_data.description} ({eval_data.num_examples} examples"
    batch = eval_data.batch_size
    text += f", batches of {batch})" if batch else ")"
    if evaluator is not None and evaluator.tower0_only:
        text += "; independent mode: scores tower 0's copy"
    workers = getattr(evaluator, "num_workers", 1)  # a cluster_eval.ClusterEvaluator's
    if workers > 1:
        text += (f"; shared by {workers} workers (batches k, k+{workers}, ... on worker k), "
                 "the counts summed")
    return text


def format_result(result, step=None):
    """One line, ending with the example count and the split it came from."""
    where = f" (step {step})" if step is not None else ""
    return (f"Accuracy @ 1 = {result.top1:.4f} Accuracy @ 5 = {result.top5:.4f}{where} "
            f"images/sec: {result.images_per_sec:.1f} "
            f"[{result.num_examples} examples, {result.description}]")


__all__ = ["EvalData", "EvalResult", "Evaluator", "Tally", "eval_data_for", "format_result",
           "result_of"]
