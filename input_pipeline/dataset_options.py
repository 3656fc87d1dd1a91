"""tf_cnn_benchmarks' --datasets_* knobs, on a file reader's tf.data pipeline.

    records -> [take(1).cache().repeat: --datasets_repeat_cached_sample]
            -> [cache: --datasets_use_caching] -> shuffle, map, batch
            -> [prefetch(--datasets_prefetch_buffer_size): --datasets_use_prefetch]
            -> [private thread pool: --datasets_num_private_threads]

and, for ImageNet's TFRecord shards, the interleave's cycle length, order and
prefetch (--datasets_parallel_interleave_*, --datasets_sloppy_parallel_interleave).
The defaults are towertrain's pipeline as it was before these flags.
"""
import collections

import tensorflow as tf

DatasetOptions = collections.namedtuple(
    "DatasetOptions", "use_prefetch prefetch_buffer_size num_private_threads use_caching "
    "interleave_cycle_length sloppy_interleave interleave_prefetch repeat_cached_sample",
    defaults=(True, None, None, False, None, False, None, False))
DatasetOptions.__doc__ = "A file reader's pipeline options (the --datasets_* flags)."

DEFAULT = DatasetOptions()


def on_records(records, options, num_examples):
    """The record-level options. `records` is a dataset, or a function of the
    epoch (shards ordered per epoch); caching needs one dataset, so there the
    first epoch's shard order is kept for every epoch."""
    if not (options.use_caching or options.repeat_cached_sample):
        return records
    if callable(records):
        records = records(tf.constant(0, tf.int64))
    if options.repeat_cached_sample:
        # One record in memory, repeated for a whole epoch (so epochs keep their length).
        records = records.take(1).cache().repeat(num_examples)
    if options.use_caching:
        records = records.cache()  # one cache, shared by every epoch's pass
    return records


def on_batches(batches, options):
    """The batch-level options: the final prefetch and the private thread pool."""
    if options.use_prefetch:
        batches = batches.prefetch(options.prefetch_buffer_size or tf.data.AUTOTUNE)
    if options.num_private_threads:
        threading = tf.data.Options()
        threading.threading.private_threadpool_size = options.num_private_threads
        batches = batches.with_options(threading)
    return batches


def interleave(files, read, options, default_cycle_length, deterministic=True):
    """read(file) -> dataset, interleaved over the `files` dataset."""
    cycle = options.interleave_cycle_length or default_cycle_length
    if options.interleave_prefetch is not None:
        # tf.data.Dataset.interleave does not take the shards to open ahead;
        # the experimental op tf_cnn_benchmarks used does.
        return files.apply(tf.data.experimental.parallel_interleave(
            read, cycle_length=cycle, sloppy=options.sloppy_interleave,
            prefetch_input_elements=options.interleave_prefetch))
    return files.interleave(read, cycle_length=cycle, num_parallel_calls=tf.data.AUTOTUNE,
                            deterministic=deterministic and not options.sloppy_interleave)
