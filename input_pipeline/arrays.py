"""Input from a tf.data dataset of global batches, sliced on the CPU.

Also the shared epoch pipeline: examples -> (shuffle) -> parallel map ->
batches of one epoch (the last one partial) -> repeat -> prefetch, used by
the in-memory, generator and file readers alike.
"""
import numpy as np
import tensorflow as tf

from towertrain.params import ParamsError

from .base import EvalData, Input
from .slicing import split_to_devices


class InputError(ParamsError):
    """Bad input data; the message names the file or directory at fault."""


class DatasetInput(Input):
    """Wraps a dataset whose elements are global (images, labels) batches.

    num_examples / steps_per_epoch are set for finite data (epoch runs);
    None means the dataset repeats without end. eval_fn(batch_size) -> EvalData
    gives the eval split where the data has one.
    """

    name = "dataset"
    # (lowest, highest) label, where the data is in memory (from_arrays): lets
    # towertrain.model_checks say "label 12 outside the model's 10 classes" up front.
    label_range = None

    def __init__(self, dataset, global_batch=None, num_examples=None, description=None,
                 eval_fn=None):
        self.dataset = dataset
        self.global_batch = global_batch
        self.num_examples = num_examples
        self.description = description  # e.g. the data_dir, for error messages
        self._eval_fn = eval_fn
        self._iterator = None

    def create(self, devices):
        del devices  # the global batch is assembled on the CPU and split per step
        with tf.device("/cpu:0"):
            self._iterator = iter(self.dataset)

    def tower_batches(self, devices):
        with tf.device("/cpu:0"):
            batch = next(self._iterator)
        return split_to_devices(batch, devices)

    def eval_data(self, batch_size):
        if self._eval_fn is None:
            return super().eval_data(batch_size)
        return self._eval_fn(batch_size)

    def checkpoint_state(self):
        return self._iterator


def to_data_format(images, data_format):
    """NHWC batch -> the run's layout; the transpose runs in the CPU pipeline."""
    if data_format == "NCHW":
        return tf.transpose(images, [0, 3, 1, 2])
    return images


def epoch_batches(examples, global_batch, num_epochs=None, shuffle=False, seed=0,
                  buffer_size=10000, map_fn=None, data_format="NHWC", drop_remainder=False):
    """Global batches from a dataset of single examples, epoch by epoch.

    map_fn(example, seed) -> (image HWC, label) runs in parallel, deterministically:
    `seed` is a per-example stateless seed that differs every epoch, so the
    augmentation is random but fixed by the run's seed. Each epoch ends with
    its partial batch (drop_remainder=False), so every example is trained once
    per epoch; num_epochs=None repeats forever.
    """
    if shuffle:
        examples = examples.shuffle(buffer_size, seed=seed, reshuffle_each_iteration=True)
    if map_fn is not None:
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
        examples = tf.data.Dataset.zip((examples, seeds)).map(
            map_fn, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    batches = examples.batch(global_batch, drop_remainder=drop_remainder)
    batches = batches.repeat(num_epochs)
    batches = batches.map(lambda images, labels: (to_data_format(images, data_format), labels))
    return batches.prefetch(tf.data.AUTOTUNE)


def records_input(records, data_dir, global_batch, num_examples, train, num_epochs, seed,
                  train_map, eval_map, data_format, eval_fn=None):
    """A DatasetInput over a dataset file's records: shuffled and augmented with
    train_map for training, eval_map in file order otherwise."""
    batches = epoch_batches(records, global_batch, num_epochs, shuffle=train, seed=seed,
                            buffer_size=min(num_examples, 10000),
                            map_fn=train_map if train else eval_map, data_format=data_format)
    return DatasetInput(batches, global_batch, num_examples=num_examples,
                        description=f"--data_dir={data_dir}", eval_fn=eval_fn)


def eval_records(records, num_examples, batch_size, eval_map, data_format, description):
    """EvalData over a split's records: file order, eval preprocessing, one pass."""
    batches = epoch_batches(records, batch_size, num_epochs=1, map_fn=eval_map,
                            data_format=data_format)
    return EvalData(batches, num_examples, description, batch_size)


def from_arrays(images, labels, global_batch, shuffle=False, seed=0, repeat=True,
                num_epochs=None):
    """A DatasetInput over in-memory numpy arrays (already in the model's layout).

    Default: repeats forever in full batches. num_epochs=K: K exact epochs,
    each ending with its partial batch.
    """
    images = np.asarray(images)
    labels = np.asarray(labels)
    if len(images) != len(labels):
        raise ValueError(f"images ({len(images)}) and labels ({len(labels)}) differ in length")
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    if num_epochs is not None:
        batches = epoch_batches(dataset, global_batch, num_epochs, shuffle, seed,
                                buffer_size=len(images))
        result = DatasetInput(batches, global_batch, num_examples=len(images))
    else:
        if shuffle:
            dataset = dataset.shuffle(len(images), seed=seed, reshuffle_each_iteration=True)
        if repeat:
            dataset = dataset.repeat()
        dataset = dataset.batch(global_batch, drop_remainder=repeat)
        result = DatasetInput(dataset.prefetch(tf.data.AUTOTUNE), global_batch,
                              num_examples=None if repeat else len(images))
    if labels.size and np.issubdtype(labels.dtype, np.number):
        result.label_range = (labels.min().item(), labels.max().item())
    return result


def from_generator(generator_fn, output_signature, global_batch, num_examples=None,
                   num_epochs=None):
    """A DatasetInput over a Python generator of (image, label) examples.

    generator_fn() is called once per epoch. Give num_examples for epoch runs.
    """
    dataset = tf.data.Dataset.from_generator(generator_fn, output_signature=output_signature)
    batches = epoch_batches(dataset, global_batch, num_epochs)
    return DatasetInput(batches, global_batch, num_examples=num_examples)


def from_dataset(dataset, global_batch=None, batched=False, num_examples=None,
                 num_epochs=None):
    """A DatasetInput over any tf.data.Dataset of (image, label) pairs.

    batched=False (default): the dataset yields single examples; they are
    batched here into global batches of `global_batch` (required), each epoch
    ending with its partial batch. batched=True: the dataset already yields
    global (images, labels) batches, used as they are (global_batch defaults
    to their static batch size, if they have one). Images must be in the
    model's layout (see --data_format). Either way the data repeats for
    num_epochs passes (None: forever); give num_examples (examples per pass)
    for Params(num_epochs=...) runs.
    """
    if not isinstance(dataset, tf.data.Dataset):
        raise TypeError(f"from_dataset: expected a tf.data.Dataset, got "
                        f"{type(dataset).__name__}")
    spec = dataset.element_spec
    if not (isinstance(spec, tuple) and len(spec) == 2
            and all(isinstance(s, tf.TensorSpec) for s in spec)):
        raise InputError(f"from_dataset: elements must be (images, labels) pairs of "
                         f"tensors; this dataset yields {spec}")
    if not batched:
        if not global_batch:
            raise InputError("from_dataset: a dataset of single examples needs "
                             "global_batch (examples per step); pass batched=True if "
                             "its elements are already batches")
        batches = epoch_batches(dataset, global_batch, num_epochs)
        return DatasetInput(batches, global_batch, num_examples=num_examples)
    if global_batch is None:
        global_batch = spec[0].shape[0] if spec[0].shape.rank else None
    return DatasetInput(dataset.repeat(num_epochs).prefetch(tf.data.AUTOTUNE), global_batch,
                        num_examples=num_examples)
