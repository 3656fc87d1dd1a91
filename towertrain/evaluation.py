"""Top-1/top-5 accuracy over a whole eval set, on any number of devices.

Each (images, labels) batch of a finite tf.data dataset is split on the CPU
over the towers (uneven splits and an uneven last batch included); each tower
runs the model in inference mode on its own copy of the variables, and the
counts are summed on the CPU. Every example is counted exactly once.
"""
import collections

import numpy as np
import tensorflow as tf

from towertrain.input_pipeline import from_arrays, split_to_devices

EvalResult = collections.namedtuple("EvalResult", "top1 top5 num_examples logits")


class Evaluator:
    """Evaluates the variables a manager holds, with `model` as the function."""

    def __init__(self, model, manager, devices):
        self.model = model
        self.manager = manager
        self.devices = list(devices)
        self._batch_fn = tf.function(self._eval_batch)

    def _eval_batch(self, images, labels):
        logits = []
        for i, (device, (tower_images, _)) in enumerate(
                zip(self.devices, split_to_devices((images, labels), self.devices))):
            if tower_images.shape[0] == 0:  # statically empty slice
                continue
            with tf.device(device), tf.name_scope(f"eval_tower_{i}"):
                trainable, non_trainable = self.manager.tower_inputs(i)
                out, _ = self.model.stateless_call(trainable, non_trainable, tower_images,
                                                   training=False)
                logits.append(tf.cast(out, tf.float32))
        with tf.device("/cpu:0"):
            logits = tf.concat(logits, axis=0) if len(logits) > 1 else tf.identity(logits[0])
            labels = tf.cast(tf.reshape(labels, [-1]), tf.int32)
            k5 = min(5, logits.shape[-1])
            top1 = tf.reduce_sum(tf.cast(tf.math.in_top_k(labels, logits, 1), tf.int64))
            top5 = tf.reduce_sum(tf.cast(tf.math.in_top_k(labels, logits, k5), tf.int64))
            return logits, top1, top5

    def evaluate(self, dataset, keep_logits=False):
        """dataset: finite, of (images, labels) batches in the model's data format."""
        correct1 = correct5 = count = 0
        kept = []
        for images, labels in dataset:
            logits, top1, top5 = self._batch_fn(images, labels)
            correct1 += int(top1)
            correct5 += int(top5)
            count += int(labels.shape[0])
            if keep_logits:
                kept.append(logits.numpy())
        if count == 0:
            raise ValueError("the eval dataset is empty")
        return EvalResult(correct1 / count, correct5 / count, count,
                          np.concatenate(kept) if keep_logits else None)


def synthetic_eval_dataset(image_shape, num_classes, num_examples, batch_size, seed=0):
    """A finite, deterministic dataset for when no real eval data exists."""
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((num_examples,) + tuple(image_shape)).astype(np.float32)
    labels = rng.integers(0, num_classes, num_examples).astype(np.int32)
    return from_arrays(images, labels, batch_size, repeat=False).dataset


def eval_dataset_for(trainer, num_examples=None):
    """The trainer input's eval set where it has one, else synthetic data."""
    maker = getattr(trainer.input, "eval_dataset", None)
    if maker is not None:
        return maker()
    batch = trainer.global_batch_size
    return synthetic_eval_dataset(trainer.model.input_shape[1:], trainer.model.output_shape[-1],
                                  num_examples or 10 * batch, batch,
                                  seed=trainer.params.tf_random_seed)


def format_result(result, step=None):
    where = f" (step {step})" if step is not None else ""
    return (f"Accuracy @ 1 = {result.top1:.4f} Accuracy @ 5 = {result.top5:.4f} "
            f"[{result.num_examples} examples]{where}")


def run_eval(trainer, write=print, dataset=None):
    """--eval: restores the given or latest checkpoint into the trainer's devices
    (any mode, device count or data format) and evaluates it once."""
    from towertrain import benchmark_log, checkpoint as ckpt_lib  # deferred: avoids a cycle
    p = trainer.params
    path = ckpt_lib.resolve(p.train_dir, p.checkpoint)
    state = ckpt_lib.EngineState(trainer.model, trainer.variables)
    ckpt_lib.restore(state.checkpoint(with_input=False), path, state.variables)
    state.sync_copies()
    info = [(label, value) for label, value in trainer.header_info()
            if label not in ("Mode", "Num batches", "Optimizer")]
    info.insert(3, ("Mode", "evaluation"))
    info.append(("Checkpoint", f"{path} (step {state.global_step()})"))
    for line in benchmark_log.header_lines(info):
        write(line)
    result = Evaluator(trainer.model, trainer.variables, trainer.devices).evaluate(
        dataset if dataset is not None else eval_dataset_for(trainer))
    write(format_result(result, state.global_step()))
    return result
