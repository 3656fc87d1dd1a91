"""--forward_only: tf_cnn_benchmarks' inference benchmark.

Every tower runs the model in inference mode (training=False: batch norm uses
its moving statistics, dropout is off) on its slice of the batch, with the
variables where the run's --variable_update keeps them; nothing is
differentiated, exchanged or applied, and nothing is written. Prints
tf_cnn_benchmarks' lines: the header, warm-up, a step line per
--display_every timed batches (images/sec, loss, top-1, top-5 of the batch)
and `total images/sec`.

    trainer = Trainer(params)            # builds model, devices, variables, input
    result = inference.run(trainer.plan, trainer.model, trainer.devices,
                           trainer.variables, trainer.feed, trainer.loss_fn)
"""
import collections
import time

import tensorflow as tf

from towertrain.engine.run import benchmark_log
from towertrain.engine.step import model_call
from towertrain.engine.step import tower
from towertrain.recipe import precision

InferenceResult = collections.namedtuple("InferenceResult", "images_per_sec steps examples")


class ForwardStep:
    """One batch of `input_source` through every tower in inference mode, as
    one tf.function. fn() returns (mean loss, top-1 count, top-5 count, examples)."""

    def __init__(self, model, devices, variables, input_source, loss_fn):
        self.model, self.devices, self.variables = model, list(devices), variables
        self.input, self.loss_fn = input_source, loss_fn
        self.fn = tf.function(self._step, autograph=False)

    def _step(self):
        losses, top1, top5, counts = [], [], [], []
        batches = self.input.tower_batches(self.devices)
        for i, (device, (images, labels)) in enumerate(zip(self.devices, batches)):
            if images.shape[0] == 0:  # statically empty slice: fewer examples than towers
                continue
            with tf.device(device), tf.name_scope(f"forward_tower_{i}"):
                trainable, non_trainable = self.variables.tower_inputs(i)
                logits = model_call.call(self.model, trainable, non_trainable, images,
                                         training=False).outputs
                logits = tf.cast(logits, tf.float32)
                labels = tf.cast(tf.reshape(labels, [-1]), tf.int32)
                losses.append(tf.reduce_sum(tower.call_loss(self.loss_fn, labels, logits)))
                k5 = min(5, logits.shape[-1])
                top1.append(tf.reduce_sum(tf.cast(tf.math.in_top_k(labels, logits, 1),
                                                  tf.int64)))
                top5.append(tf.reduce_sum(tf.cast(tf.math.in_top_k(labels, logits, k5),
                                                  tf.int64)))
                counts.append(tf.shape(labels, out_type=tf.int64)[0])
        with tf.device("/cpu:0"):
            count = tf.add_n(counts)
            loss = tf.add_n(losses) / tf.cast(tf.maximum(count, 1), tf.float32)
            return loss, tf.add_n(top1), tf.add_n(top5), count


def header_info(plan, model, input_source):
    """The header of a forward-only run of `plan`: training's facts without
    the recipe."""
    static = plan.describe()
    global_batch = plan.batches.global_batch
    info = [("TensorFlow", tf.__version__), ("Model", model.name),
            ("Dataset", f"{plan.dataset} ({input_source.name})"),
            ("Mode", "forward-only (inference; nothing is trained or written)"),
            ("Batch size", [f"{global_batch} global",
                            f"{global_batch / plan.topology.num_towers:g} per device"]),
            ("Num batches", plan.steps.timed), ("Devices", static["Devices"]),
            ("Data format", static["Data format"]), ("Variables", static["Variables"])]
    return info + precision.header_info(plan.recipe.precision, None)


def run(plan, model, devices, variables, feed, loss_fn, write=print):
    """Times the plan's timed steps of forward passes after its warmup steps
    (untimed), on `feed`'s input (engine.feed.position.FeedPosition); returns an
    InferenceResult."""
    step = ForwardStep(model, devices, variables, feed.input, loss_fn)
    for line in benchmark_log.header_lines(header_info(plan, model, feed.input)):
        write(line)
    feed.begin(0)
    warmup, timed = plan.steps.warmup, plan.steps.timed
    if warmup:
        write("Running warm up")
        for _ in range(warmup):
            _results(step.fn())
        write("Done warm up")
    write("Step\tImg/sec\ttotal_loss\ttop_1_accuracy\ttop_5_accuracy")
    times = benchmark_log.StepTimes()
    for number in range(1, timed + 1):
        started = time.perf_counter()
        loss, correct1, correct5, count = _results(step.fn())
        times.add(count, time.perf_counter() - started)
        if plan.outputs.is_display_step(number, number):
            write(times.step_line(number, loss, top1=correct1 / count)
                  + f"\t{correct5 / count:.3f}")
    images_per_sec = times.total_images_per_sec()
    for line in benchmark_log.total_lines(images_per_sec):
        write(line)
    return InferenceResult(images_per_sec, timed, sum(times.examples))


def _results(outputs):
    """Python numbers, so a timed step includes its device work."""
    loss, top1, top5, count = outputs
    return float(loss), int(top1), int(top5), max(int(count), 1)


__all__ = ["ForwardStep", "InferenceResult", "run"]
