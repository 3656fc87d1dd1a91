"""Checks of the runtime, input-pipeline and tf_cnn_benchmarks compatibility
flags (threads, --mkl, GPUs, --datasets_*, ...), kept apart from params.py so
each file stays small. fail(flag, value, message) raises ParamsError."""

KMP_FLAGS = ("kmp_blocktime", "kmp_affinity", "kmp_settings")
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
    for flag in ("num_intra_threads", "num_inter_threads", "kmp_blocktime", "kmp_settings",
                 "datasets_num_private_threads"):
        value = getattr(p, flag)
        if value is not None and value < 0:
            fail(flag, value, "must be >= 0")
    for flag in ("datasets_prefetch_buffer_size", "datasets_parallel_interleave_cycle_length",
                 "datasets_parallel_interleave_prefetch", "batch_group_size"):
        value = getattr(p, flag)
        if value is not None and value < 1:
            fail(flag, value, "must be >= 1")
    if p.step_timeout_secs is not None and not p.step_timeout_secs >= 0:
        fail("step_timeout_secs", p.step_timeout_secs, "must be >= 0 seconds (0: no watch "
             "of the steps)")
    if p.allow_growth is not None and p.resolved_device != "gpu":
        fail("allow_growth", p.allow_growth, "sets GPU memory growth; CPU devices have "
             "none to set (use it with --device=gpu, or drop it)")
    if p.gpu_indices is not None:
        try:
            indices = parse_gpu_indices(p.gpu_indices)
        except ValueError as err:
            fail("gpu_indices", p.gpu_indices, str(err))
        if p.resolved_device != "gpu":
            fail("gpu_indices", p.gpu_indices, "needs --device=gpu (it picks physical GPUs)")
        if len(indices) != p.num_gpus:
            fail("gpu_indices", p.gpu_indices, f"lists {len(indices)} GPU(s) for "
                 f"--num_gpus={p.num_gpus} towers; list one GPU per tower")
    if p.batch_group_size > 1 and p.staging_depth == 0:
        fail("batch_group_size", p.batch_group_size, "needs staging (--staging_depth >= 1): "
             "it is the number of batches put on each device at a time")


def check_command_line(p, explicit, fail):
    """Flags given on the command line that the combination would ignore."""
    if not p.mkl:
        for flag in KMP_FLAGS:
            if flag in explicit:
                fail(flag, getattr(p, flag), "only applies with --mkl (it sets the OpenMP "
                     "environment then)")
    if "use_chrome_trace_format" in explicit and not p.trace_file:
        fail("use_chrome_trace_format", p.use_chrome_trace_format,
             "only applies with --trace_file")
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


def parse_gpu_indices(text):
    """'2,0' -> [2, 0]; ValueError with the reason on a bad list."""
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        raise ValueError("must be comma-separated GPU indices, e.g. 0,1,2,3")
    indices = [int(part) for part in parts]
    if len(set(indices)) != len(indices):
        raise ValueError("lists a GPU twice (one tower per GPU)")
    return indices
