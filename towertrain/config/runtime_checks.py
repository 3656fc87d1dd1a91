"""Checks of the runtime, input-pipeline and tf_cnn_benchmarks compatibility
flags (threads, --mkl, GPUs, --datasets_*, ...), kept apart from params.py so
each file stays small. fail(flag, value, message) raises ParamsError."""

DATASETS_FLAGS = ("datasets_use_prefetch", "datasets_prefetch_buffer_size",
                  "datasets_num_private_threads", "datasets_use_caching",
                  "datasets_parallel_interleave_cycle_length",
                  "datasets_sloppy_parallel_interleave",
                  "datasets_parallel_interleave_prefetch", "datasets_repeat_cached_sample")
INTERLEAVE_FLAGS = ("datasets_parallel_interleave_cycle_length",
                    "datasets_sloppy_parallel_interleave",
                    "datasets_parallel_interleave_prefetch")


def validate_runtime(p, fail):
    """The checks any caller (CLI or library) gets."""
    value = p.datasets_num_private_threads
    if value is not None and value < 0:
        fail("datasets_num_private_threads", value, "must be >= 0")
    for flag in ("datasets_prefetch_buffer_size", "datasets_parallel_interleave_cycle_length",
                 "datasets_parallel_interleave_prefetch", "batch_group_size"):
        value = getattr(p, flag)
        if value is not None and value < 1:
            fail(flag, value, "must be >= 1")
    if p.batch_group_size > 1 and p.staging_depth == 0:
        fail("batch_group_size", p.batch_group_size, "needs staging (--staging_depth >= 1): "
             "it is the number of batches put on each device at a time")


def check_command_line(p, explicit, fail):
    """Flags given on the command line that the combination would ignore."""
    given = [flag for flag in DATASETS_FLAGS if flag in explicit]
    if given and (p.data_dir is None or p.input != "dataset"):
        fail(given[0], getattr(p, given[0]), "only applies to a tf.data pipeline over "
             "files (--data_dir with --input=dataset)")
    if "batch_group_size" in explicit and p.data_dir is None:
        fail("batch_group_size", p.batch_group_size, "needs --data_dir (synthetic data is "
             "generated on each device and never staged)")
    if "datasets_prefetch_buffer_size" in explicit and not p.datasets_use_prefetch:
        fail("datasets_prefetch_buffer_size", p.datasets_prefetch_buffer_size,
             "conflicts with --nodatasets_use_prefetch; drop one")
