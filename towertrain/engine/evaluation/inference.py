"""--forward_only: tf_cnn_benchmarks' inference benchmark.

Every tower runs the model in inference mode (training=False: batch norm uses
its moving statistics, dropout is off) on its slice of the batch, with the
variables where the run's --variable_update keeps them; nothing is
differentiated, exchanged or applied, and nothing is written. Prints
tf_cnn_benchmarks' lines: the header, warm-up, a step line per
--display_every timed batches (images/sec, loss, top-1, top-5 of the batch)
and `total images/sec`.

    trainer = Trainer(params)            # builds model, devices, variables, input
    result = inference.run(trainer)      # InferenceResult
"""
import collections
import time

import tensorflow as tf

from towertrain.engine.run import benchmark_log
from towertrain.recipe import precision

InferenceResult = collections.namedtuple("InferenceResult", "images_per_sec steps examples")


class ForwardStep:
    """One batch through every tower in inference mode, as one tf.function.
    fn() returns (mean loss, top-1 count, top-5 count, examples)."""

    def __init__(self, trainer):
        self.trainer = trainer
        self.fn = tf.function(self._step)

    def _step(self):
        trainer = self.trainer
        losses, top1, top5, counts = [], [], [], []
        batches = trainer.input.tower_batches(trainer.devices)
        for i, (device, (images, labels)) in enumerate(zip(trainer.devices, batches)):
            if images.shape[0] == 0:  # statically empty slice: fewer examples than towers
                continue
            with tf.device(device), tf.name_scope(f"forward_tower_{i}"):
                trainable, non_trainable = trainer.variables.tower_inputs(i)
                logits, _ = trainer.model.stateless_call(trainable, non_trainable, images,
                                                         training=False)
                logits = tf.cast(logits, tf.float32)
                labels = tf.cast(tf.reshape(labels, [-1]), tf.int32)
                losses.append(tf.reduce_sum(trainer.loss_fn(labels, logits)))
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


def header_info(trainer):
    """The header of a forward-only run: training's facts without the recipe."""
    p = trainer.params
    devices = trainer.devices
    info = [("TensorFlow", tf.__version__), ("Model", trainer.model.name),
            ("Dataset", f"{trainer.dataset_name} ({trainer.input.name})"),
            ("Mode", "forward-only (inference; nothing is trained or written)"),
            ("Batch size", [f"{trainer.global_batch_size} global",
                            f"{trainer.global_batch_size / len(devices):g} per device"]),
            ("Num batches", trainer.num_batches), ("Devices", str(devices)),
            ("Data format", trainer.data_format), ("Variables", p.variable_update)]
    return info + precision.header_info(p, None)


def run(trainer, write=print):
    """Times trainer.num_batches forward passes after trainer.num_warmup_batches
    untimed ones; returns an InferenceResult."""
    step = ForwardStep(trainer)
    for line in benchmark_log.header_lines(header_info(trainer)):
        write(line)
    trainer.begin(0)
    warmup, timed = trainer.num_warmup_batches, trainer.num_batches
    if warmup:
        write("Running warm up")
        for _ in range(warmup):
            _results(step.fn())
        write("Done warm up")
    write("Step\tImg/sec\ttotal_loss\ttop_1_accuracy\ttop_5_accuracy")
    times = benchmark_log.StepTimes()
    display_every = trainer.params.display_every
    for number in range(1, timed + 1):
        started = time.perf_counter()
        loss, correct1, correct5, count = _results(step.fn())
        times.add(count, time.perf_counter() - started)
        if number == 1 or number % display_every == 0:
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
