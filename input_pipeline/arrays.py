"""Input from a tf.data dataset of global batches, sliced on the CPU.

Also the shared epoch pipeline: examples -> (shuffle) -> parallel map ->
batches of one epoch (the last one partial) -> repeat -> prefetch, used by
the in-memory, generator and file readers alike.
"""
import numpy as np
import tensorflow as tf

from towertrain import tf_errors
from towertrain.errors import ParamsError

from . import array_checks, dataset_options
from .base import EvalData, Input
from .slicing import split_to_devices
from towertrain.errors import InputError  # noqa: F401 - raised here



class DatasetInput(Input):
    """Wraps a dataset whose elements are global (images, labels) batches.

    num_examples / steps_per_epoch are set for finite data (epoch runs);
    None means the dataset repeats without end. eval_fn(batch_size) -> EvalData
    gives the eval split where the data has one.
    """

    name = "dataset"
    # (lowest, highest) label, where the data is in memory (from_arrays): lets
    # towertrain.engine.contract.up_front say "label 12 outside the model's 10
    # classes" up front.
    label_range = None
    # Data not seen up front: `entry_point` names the library function that
    # made the input (from_dataset, from_generator) for errors;
    # towertrain.engine.contract.up_front sets label_classes (the model's
    # classes, default loss) and each global batch's labels are then checked
    # on the CPU in the step: one min and one max.
    entry_point = None
    label_classes = None
    # Passes over the data this input yields (None: without end); the Trainer
    # compares it with Params(num_epochs) (towertrain.engine.feed.epochs).
    num_epochs = None
    # In-memory data of known length that repeats without end: examples per
    # pass, and epochs_fn(K) -> a dataset of exactly K epochs (with_epochs).
    known_examples = None
    epochs_fn = None
    origin = None  # where the data comes from, for the header (e.g. 'from_arrays: ...')
    # A multi-worker reader's slicing.WorkerShare: its batches hold only this
    # worker's rows of each global batch (None: whole global batches).
    worker_share = None
    # File readers, whose batches are a function of their position: the
    # variable their pipeline reads its first global batch from, when it
    # reads its first element. Such an input keeps its position out of
    # checkpoints: resume_after sets it before the first step (the examples
    # before it are read, not decoded), so a checkpoint of any topology
    # resumes on any other. The tf.data iterator's own state would carry the
    # chief's prefetched share of each batch into the other workers.
    start_position = None
    restart_fn = None  # restart_fn(position): the same batches from there (a dataset)

    def __init__(self, dataset, global_batch=None, num_examples=None, description=None,
                 eval_fn=None, num_epochs=None):
        self.dataset = dataset
        self.global_batch = global_batch
        self.num_examples = num_examples
        self.num_epochs = num_epochs
        self.description = description  # e.g. the data_dir, for error messages
        self._eval_fn = eval_fn
        self._iterator = None

    def with_epochs(self, num_epochs):
        """This in-memory input as exactly `num_epochs` passes (each ending with
        its partial batch), or None when it cannot say where its epochs end."""
        if self.epochs_fn is None:
            return None
        result = DatasetInput(self.epochs_fn(num_epochs), self.global_batch,
                              num_examples=self.known_examples, description=self.description,
                              eval_fn=self._eval_fn, num_epochs=num_epochs)
        result.label_range, result.entry_point = self.label_range, self.entry_point
        result.origin = self.origin
        return result

    def create(self, devices):
        del devices  # the global batch is assembled on the CPU and split per step
        with tf.device("/cpu:0"):
            self._iterator = iter(self.dataset)

    def resume_after(self, step):
        if self.start_position is not None:
            self.start_position.assign(step)

    def tower_batches(self, devices):
        with tf.device("/cpu:0"):
            batch = next(self._iterator)
            if self.label_classes is not None:
                batch = (batch[0], checked_labels(batch[1], self.label_classes,
                                                  self.entry_point))
        return split_to_devices(batch, devices)

    def eval_data(self, batch_size):
        if self._eval_fn is None:
            return super().eval_data(batch_size)
        return self._eval_fn(batch_size)

    def checkpoint_state(self):
        return None if self.start_position is not None else self._iterator


def checked_labels(labels, num_classes, entry_point):
    """`labels`, after an assertion that they lie in 0 .. num_classes - 1."""
    where = f"towertrain.{entry_point}" if entry_point else "the"
    check = label_check(labels, num_classes, where)
    if check is None:
        return labels
    with tf.control_dependencies([check]):
        return tf.identity(labels)


def label_check(labels, num_classes, where):
    """The assertion that `labels` lie in 0 .. num_classes - 1 (None for labels
    that are not numbers); where: the input named by its error."""
    if not (labels.dtype.is_integer or labels.dtype.is_floating):
        return None
    low = tf.cast(tf.reduce_min(labels), tf.float64)
    high = tf.cast(tf.reduce_max(labels), tf.float64)
    in_range = tf.logical_and(low >= 0, high < num_classes)
    return tf.debugging.Assert(in_range, [tf_errors.LABEL_CHECK, where, low, high, num_classes])


def to_data_format(images, data_format):
    """NHWC batch -> the run's layout; the transpose runs in the CPU pipeline."""
    if data_format == "NCHW":
        return tf.transpose(images, [0, 3, 1, 2])
    return images


def epoch_batches(examples, global_batch, num_epochs=None, shuffle=False, seed=0,
                  buffer_size=10000, map_fn=None, data_format="NHWC", drop_remainder=False,
                  options=dataset_options.DEFAULT, share=None, start_batch=0,
                  epoch_examples=None, finish=True):
    """Global batches from single examples, epoch by epoch.

    examples: a dataset of single examples, or a function (epoch: int64 tensor)
    -> such a dataset (an input that orders its shards per epoch).
    map_fn(example, seed) -> (image HWC, label) runs in parallel, deterministically.
    Each epoch ends with its partial batch (drop_remainder=False), so every
    example is trained once per epoch; num_epochs=None repeats forever.

    Every random choice is a function of (seed, epoch, position in the epoch):
    the shuffle seed of epoch e and each example's augmentation seed are derived
    from them, never from a generator that advances across epochs. A run resumed
    from a checkpoint (the tf.data iterator state, or start_batch) therefore
    sees exactly the batches an uninterrupted run sees, an epoch boundary
    included, and so does
    a finished run extended by more epochs. options: the --datasets_* knobs
    at the end of the pipeline (input_pipeline.dataset_options).

    share (a slicing.WorkerShare, with map_fn): a worker of a multi-worker run
    reads every example but maps (decodes, augments) only the rows of its
    own towers in each global batch, each with the seed pair it has in the
    whole batch; the batches it yields hold those rows alone.

    start_batch: begin at that global batch of the stream (the examples
    before it are read, never mapped); needs every epoch but the last to be
    whole batches apart, as here (each epoch ends with its partial batch):
    pass the number of examples per epoch in `epoch_examples`.
    """
    first_epoch, skip = 0, 0
    if not (isinstance(start_batch, int) and start_batch == 0):
        batches_per_epoch = -(-epoch_examples // global_batch)
        start_batch = tf.cast(start_batch, tf.int64)
        first_epoch, skip = start_batch // batches_per_epoch, start_batch % batches_per_epoch

    def one_epoch(epoch):
        data = examples(epoch) if callable(examples) else examples
        if shuffle:
            data = seeded_shuffle(data, buffer_size, epoch_seed(seed, epoch, SHUFFLE))
        skipped = tf.where(epoch == first_epoch, tf.cast(skip, tf.int64),
                           tf.constant(0, tf.int64))
        if map_fn is None:
            return data.batch(global_batch, drop_remainder=drop_remainder).skip(skipped)
        # Example i of the epoch gets the seed pair (epoch key, i).
        augment_key = epoch_seed(seed, epoch, AUGMENT)

        def mapped(index, example):
            return map_fn(example, tf.stack([augment_key, index]))
        data = data.enumerate()
        if share is None:
            return data.skip(skipped * global_batch).map(
                mapped, num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=True).batch(global_batch, drop_remainder=drop_remainder)
        return data.batch(global_batch, drop_remainder=drop_remainder).skip(skipped).map(
            _share_mapper(share, mapped, data.map(mapped).element_spec),
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

    batches = epoch_indices(num_epochs, first_epoch).flat_map(one_epoch)
    batches = batches.map(lambda images, labels: (to_data_format(images, data_format), labels))
    if not finish:  # the caller applies the batch-level options on its own dataset
        return batches
    return with_epoch_seeded_shuffle(dataset_options.on_batches(batches, options))


def _share_mapper(share, mapped, output_spec):
    """(indices, examples) of a global batch -> this worker's rows, mapped one
    by one (a batch whose share is empty gives an empty batch: every worker
    yields one batch per step)."""
    def map_share(indices, examples):
        start, end = share.rows(tf.shape(indices, out_type=tf.int64)[0])
        rows = tf.nest.map_structure(lambda t: t[start:end], (indices, examples))
        return tf.map_fn(lambda row: mapped(*row), rows, fn_output_signature=output_spec)
    return map_share


def seeded_shuffle(data, buffer_size, seed):
    """data.shuffle in an order set by the `seed` tensor alone, the same in every
    pass. The graph-level seed is left out while the shuffle is built: TF
    combines the two in Python, and with a graph seed of 0 (tf.random.set_seed(0),
    --tf_random_seed=0) that asks a symbolic tensor for a bool and fails."""
    graph = tf.compat.v1.get_default_graph()
    graph_seed, graph.seed = graph.seed, None
    try:
        return data.shuffle(buffer_size, seed=seed, reshuffle_each_iteration=False)
    finally:
        graph.seed = graph_seed


def with_epoch_seeded_shuffle(dataset):
    """Lets the iterator of a pipeline that shuffles inside its per-epoch
    function be checkpointed. tf.data refuses by default: the shuffle's seed
    holder counts as external state. Here it holds nothing to save: its seeds
    are the epoch's, and restoring rebuilds it from the saved epoch index."""
    options = tf.data.Options()
    options.experimental_external_state_policy = (
        tf.data.experimental.ExternalStatePolicy.IGNORE)
    return dataset.with_options(options)


def epoch_indices(num_epochs=None, first=0):
    """first, first + 1, ... num_epochs - 1 (int64), or without end for None."""
    if num_epochs is None:
        return tf.data.Dataset.counter(start=first)
    return tf.data.Dataset.range(first, num_epochs)


def epoch_seed(seed, epoch, stream):
    """A stateless int64 seed for one random stream of epoch `epoch` of a run
    seeded `seed`: AUGMENT (per-example keys), SHUFFLE (examples), SHARDS."""
    pair = tf.stack([tf.constant(seed, tf.int64), tf.cast(epoch, tf.int64)])
    return tf.random.stateless_uniform([3], pair, dtype=tf.int64, minval=None,
                                       maxval=None)[stream]


AUGMENT, SHUFFLE, SHARDS = range(3)


def records_input(records, data_dir, global_batch, num_examples, train, num_epochs, seed,
                  train_map, eval_map, data_format, eval_fn=None,
                  options=dataset_options.DEFAULT, share=None, start_batch=0,
                  epoch_examples=None, finish=True):
    """A DatasetInput over a dataset file's records: shuffled and augmented with
    train_map for training, eval_map in file order otherwise. share: a
    multi-worker run's WorkerShare (each batch then holds only its rows)."""
    records = dataset_options.on_records(records, options, num_examples)

    def batches(start_batch=0, finish=True):
        return epoch_batches(records, global_batch, num_epochs, shuffle=train, seed=seed,
                             buffer_size=min(num_examples, 10000),
                             map_fn=train_map if train else eval_map, data_format=data_format,
                             options=options, share=share, start_batch=start_batch,
                             epoch_examples=num_examples, finish=finish)
    with tf.device("/cpu:0"):
        start = tf.Variable(0, dtype=tf.int64, trainable=False, name="input_start")
    # The gate's function runs at the iterator's first element, so the
    # pipeline starts where resume_after has set `start` by then. The
    # batch-level options go outside it (tf.data drops a function's own).
    gated = tf.data.Dataset.range(1).flat_map(
        lambda _: batches(start.read_value(), finish=False))
    gated = with_epoch_seeded_shuffle(dataset_options.on_batches(gated, options))
    result = DatasetInput(gated, global_batch,
                          num_examples=num_examples, description=f"--data_dir={data_dir}",
                          eval_fn=eval_fn, num_epochs=num_epochs)
    result.worker_share = share
    result.start_position, result.restart_fn = start, batches
    return result


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
    check_global_batch("from_arrays", global_batch)
    check_num_epochs("from_arrays", num_epochs)
    array_checks.check(images)  # raw pixels
    images = np.asarray(images)
    labels = np.asarray(labels)
    if len(images) != len(labels):
        raise ValueError(f"images ({len(images)}) and labels ({len(labels)}) differ in length")
    array_checks.check_finite(images, labels)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))

    def epochs(count, examples=dataset):  # the examples, not the batches built below
        return epoch_batches(examples, global_batch, count, shuffle, seed,
                             buffer_size=len(images))

    if num_epochs is not None:
        result = DatasetInput(epochs(num_epochs), global_batch, num_examples=len(images),
                              num_epochs=num_epochs)
    else:
        if repeat:
            # Batches run across epoch ends; each epoch's order is still a
            # function of (seed, epoch), so resume is exact anywhere.
            examples = dataset
            dataset = epoch_indices().flat_map(
                lambda epoch: (seeded_shuffle(examples, len(images),
                                              epoch_seed(seed, epoch, SHUFFLE))
                               if shuffle else examples))
        elif shuffle:
            dataset = dataset.shuffle(len(images), seed=seed)
        dataset = dataset.batch(global_batch, drop_remainder=repeat)
        result = DatasetInput(with_epoch_seeded_shuffle(dataset.prefetch(tf.data.AUTOTUNE)),
                              global_batch,
                              num_examples=None if repeat else len(images),
                              num_epochs=None if repeat else 1)
        if repeat:  # Params(num_epochs=K) rebuilds it as K exact epochs
            result.known_examples, result.epochs_fn = len(images), epochs
    result.origin = f"from_arrays: {len(images)} examples in memory"
    if labels.size and np.issubdtype(labels.dtype, np.number):
        result.label_range = (labels.min().item(), labels.max().item())
    if images.size and np.issubdtype(images.dtype, np.floating):
        # Raw pixels (0..255) are refused against a model that does not rescale
        # them (towertrain.engine.contract.keras_model.check_pixel_range).
        result.pixel_range = (images.min().item(), images.max().item())
    return result


def check_global_batch(entry_point, global_batch):
    """A bad global_batch fails where it is given, not as a TF error in the step."""
    if isinstance(global_batch, bool) or not isinstance(global_batch, (int, np.integer)) \
            or global_batch < 1:
        raise InputError(f"{entry_point}: global_batch={global_batch!r}: must be a positive "
                         "integer (examples per step, over all devices)")


def check_num_epochs(entry_point, num_epochs):
    if num_epochs is not None and (isinstance(num_epochs, bool) or not isinstance(
            num_epochs, (int, np.integer)) or num_epochs < 1):
        raise InputError(f"{entry_point}: num_epochs={num_epochs!r}: must be a positive "
                         "integer or None (repeat without end)")


def from_generator(generator_fn, output_signature, global_batch, num_examples=None,
                   num_epochs=None):
    """A DatasetInput over a Python generator of (image, label) examples.

    generator_fn() is called once per epoch. Give num_examples for epoch runs.
    """
    check_global_batch("from_generator", global_batch)
    check_num_epochs("from_generator", num_epochs)
    dataset = tf.data.Dataset.from_generator(generator_fn, output_signature=output_signature)
    batches = epoch_batches(dataset, global_batch, num_epochs)
    result = DatasetInput(batches, global_batch, num_examples=num_examples,
                          num_epochs=num_epochs)
    result.entry_point = "from_generator"
    result.origin = "from_generator"
    return result


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
        if global_batch is None:
            raise InputError("from_dataset: a dataset of single examples needs "
                             "global_batch (examples per step); pass batched=True if "
                             "its elements are already batches")
        check_global_batch("from_dataset", global_batch)
        result = DatasetInput(epoch_batches(dataset, global_batch, num_epochs), global_batch,
                              num_examples=num_examples, num_epochs=num_epochs)
    else:
        if global_batch is None:
            global_batch = spec[0].shape[0] if spec[0].shape.rank else None
        else:
            check_global_batch("from_dataset", global_batch)
        result = DatasetInput(dataset.repeat(num_epochs).prefetch(tf.data.AUTOTUNE),
                              global_batch, num_examples=num_examples, num_epochs=num_epochs)
    result.entry_point = "from_dataset"
    result.origin = "from_dataset"
    return result
