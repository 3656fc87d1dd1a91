"""Process-wide settings of a run: thread pools, XLA auto-clustering, the
MKL/OpenMP environment, GPU memory growth and the sync after each step.

tf_cnn_benchmarks put these in its session's ConfigProto and in os.environ;
on TF 2 they are tf.config calls and the same environment variables. Two
moments matter:

- set_environment(values) before TensorFlow is imported: an OpenMP runtime
  (Intel's oneDNN/MKL builds) reads KMP_* and OMP_NUM_THREADS when it loads.
  The CLI calls it with the parsed flags first thing.
- configure(params) before TensorFlow initializes its runtime (the first op):
  thread pools and memory growth cannot change after that. Trainer calls it
  first; a setting TensorFlow already holds with another value is an error
  naming the flag, never ignored.
"""
import os
import sys

from towertrain.config.runtime_checks import parse_gpu_indices  # noqa: F401 - used by devices
from towertrain.errors import ParamsError

XLA_CPU_FLAG = "--tf_xla_cpu_global_jit"  # auto-clustering on CPU needs it too


def environment(values):
    """The environment variables `values` (Params or parsed flags) set: with
    --mkl, tf_cnn_benchmarks' KMP_BLOCKTIME, KMP_SETTINGS, KMP_AFFINITY and
    OMP_NUM_THREADS (from --num_intra_threads, when given); with --xla on CPU
    devices, TF_XLA_FLAGS gains --tf_xla_cpu_global_jit (TensorFlow reads it
    when it first lists its devices: measured, TF 2.21)."""
    env = {}
    if values.mkl:
        env.update(KMP_BLOCKTIME=str(values.kmp_blocktime),
                   KMP_SETTINGS=str(values.kmp_settings), KMP_AFFINITY=values.kmp_affinity)
        if values.num_intra_threads:
            env["OMP_NUM_THREADS"] = str(values.num_intra_threads)
    if values.xla and values.device != "gpu":
        # Unset --device may still be a GPU machine: there CPU ops cluster too.
        flags = os.environ.get("TF_XLA_FLAGS", "")
        if XLA_CPU_FLAG not in flags.split():
            env["TF_XLA_FLAGS"] = f"{flags} {XLA_CPU_FLAG}".strip()
    return env


def set_environment(values):
    """Sets environment(values). After TensorFlow is imported a changed value
    would reach nothing: ParamsError naming --mkl or --xla."""
    changed = {k: v for k, v in environment(values).items() if os.environ.get(k) != v}
    if changed and "tensorflow" in sys.modules:
        flag = "mkl" if values.mkl and "TF_XLA_FLAGS" not in changed else "xla"
        raise ParamsError(f"--{flag}: {', '.join(f'{k}={v}' for k, v in changed.items())} must "
                          "be in the environment before TensorFlow is imported; export "
                          "them, or use the command line (python -m towertrain)")
    os.environ.update(changed)


def available_cores():
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def intra_op_threads(params, cluster=None, cores=None):
    """--num_intra_threads; unset, 1 on GPUs (tf_cnn_benchmarks: GPU kernels
    need no intra-op pool); on CPUs shared by K > 1 workers of `cluster` on
    this host, each worker's share of the cores (each pool would otherwise
    take every core: measured, 2 workers x 1 device on 2 cores ran at 0.91x
    of one process with both devices, and at 1.01x with 1 thread each);
    else TensorFlow's choice (None)."""
    if params.num_intra_threads is not None:
        return params.num_intra_threads
    if params.resolved_device == "gpu":
        return 1
    sharing = cluster.workers_on_this_host() if cluster is not None else 1
    if sharing > 1:
        return max(1, (cores or available_cores()) // sharing)
    return None


def describe_threads(params, cluster):
    """The header's Threads line of a run whose workers share this host's CPU
    cores (None otherwise): the intra-op pool TensorFlow holds, and why."""
    sharing = cluster.workers_on_this_host()
    if params.resolved_device == "gpu" or sharing < 2:
        return None
    import tensorflow as tf
    held = tf.config.threading.get_intra_op_parallelism_threads()
    why = ("--num_intra_threads" if params.num_intra_threads is not None else
           f"{available_cores()} cores / {sharing} workers on this host; "
           "--num_intra_threads sets it")
    return f"intra-op {held} per worker ({why})"


def configure(params, gpus=None, cluster=None):
    """Applies the thread pools, XLA auto-clustering and GPU memory growth of
    `params`. gpus: the physical GPUs (default: TensorFlow's list; tests pass
    stand-ins). cluster: the run's (default: the one `params` describe)."""
    import tensorflow as tf
    set_environment(params)
    if cluster is None:
        from towertrain.engine.distributed import resolvers
        cluster = resolvers.from_params(params)
    threading = tf.config.threading
    _apply("num_intra_threads", intra_op_threads(params, cluster),
           threading.get_intra_op_parallelism_threads,
           threading.set_intra_op_parallelism_threads,
           explicit=params.num_intra_threads is not None)
    _apply("num_inter_threads", params.num_inter_threads,
           threading.get_inter_op_parallelism_threads,
           threading.set_inter_op_parallelism_threads, explicit=True)
    if params.xla:
        tf.config.optimizer.set_jit("autoclustering")
    if params.allow_growth is not None:
        gpus = tf.config.list_physical_devices("GPU") if gpus is None else gpus
        for gpu in gpus:
            _apply("allow_growth", params.allow_growth,
                   lambda gpu=gpu: tf.config.experimental.get_memory_growth(gpu),
                   lambda value, gpu=gpu: tf.config.experimental.set_memory_growth(gpu, value),
                   explicit=True)


def _apply(flag, value, get, set_, explicit):
    """Sets a runtime option unless it already holds `value` (None: leave it)."""
    if value is None or get() == value:
        return
    try:
        set_(value)
    except RuntimeError as err:  # TensorFlow's runtime is already initialized
        if not explicit:
            return  # a default tf_cnn_benchmarks picks; TensorFlow's own stays
        raise ParamsError(f"--{flag}={value}: TensorFlow already initialized its runtime "
                          f"in this process with {get()}; set it before any TensorFlow op "
                          "runs (build the Trainer first)") from err


def sync_after_step(params):
    """--sync_on_finish: a function that waits until every device has finished
    the step's work (GPU kernels run after the step's call returns), called
    inside the timed step; None when off."""
    if not params.sync_on_finish:
        return None
    import tensorflow as tf
    return tf.test.experimental.sync_devices
