"""Process-wide settings of a run: thread pools, XLA auto-clustering, the
MKL/OpenMP environment, GPU memory growth and the sync after each step.

tf_cnn_benchmarks put these in its session's ConfigProto and in os.environ;
on TF 2 they are tf.config calls and the same environment variables. The run
plan's Runtime section (towertrain.engine.process.settings) decides them; two moments
matter when applying them:

- set_environment(env) before TensorFlow is imported: an OpenMP runtime
  (Intel's oneDNN/MKL builds) reads KMP_* and OMP_NUM_THREADS when it loads.
  The CLI calls it with the flags' environment first thing.
- configure(runtime) before TensorFlow initializes its runtime (the first op):
  thread pools and memory growth cannot change after that. Trainer calls it
  first; a setting TensorFlow already holds with another value is an error
  naming the flag, never ignored.
"""
import os
import sys

from towertrain.config import machine
from towertrain.errors import ParamsError
from towertrain.engine.process import settings as process_settings
from towertrain.engine.process.settings import XLA_CPU_FLAG  # noqa: F401 - tests read it here


def set_environment(env):
    """Sets the variables `env` ({name: value}, the plan's Runtime.environment).
    After TensorFlow is imported a changed value would reach nothing:
    ParamsError naming --mkl or --xla."""
    env = dict(env)
    changed = {k: v for k, v in env.items() if os.environ.get(k) != v}
    if changed and "tensorflow" in sys.modules:
        flag = "xla" if "TF_XLA_FLAGS" in changed else "mkl"
        raise ParamsError(f"--{flag}: {', '.join(f'{k}={v}' for k, v in changed.items())} must "
                          "be in the environment before TensorFlow is imported; export "
                          "them, or use the command line (python -m towertrain)")
    os.environ.update(changed)


def describe_threads(runtime):
    """The header's Threads line of a run whose towers share this host's CPU
    cores (None otherwise): the intra-op pool TensorFlow holds, and why."""
    if runtime.intra_threads_why is None:
        return None
    import tensorflow as tf  # deferred: the command line imports this before TensorFlow
    held = tf.config.threading.get_intra_op_parallelism_threads()
    pool = process_settings.describe_pool(held) + (" per process" if held else "")
    return f"intra-op {pool} ({runtime.intra_threads_why})"


def configure(runtime, gpus=None):
    """Applies the thread pools, XLA auto-clustering and GPU memory growth of
    the plan's `runtime` section. gpus: the physical GPUs (default: the
    machine's list; tests pass stand-ins). A section already applied in this
    process (the CLI's cluster setup did) is not applied again."""
    if gpus is None and _APPLIED.get("runtime") == runtime:
        return
    _apply_runtime(runtime, gpus)
    _APPLIED["runtime"] = runtime


_APPLIED = {}  # the Runtime section this process applied last


def _apply_runtime(runtime, gpus):
    import tensorflow as tf  # deferred: the command line imports this before TensorFlow
    set_environment(runtime.environment)
    threading = tf.config.threading
    _apply("num_intra_threads", runtime.num_intra_threads,
           threading.get_intra_op_parallelism_threads,
           threading.set_intra_op_parallelism_threads,
           explicit=runtime.intra_threads_explicit)
    _apply("num_inter_threads", runtime.num_inter_threads,
           threading.get_inter_op_parallelism_threads,
           threading.set_inter_op_parallelism_threads, explicit=True)
    if runtime.xla:
        tf.config.optimizer.set_jit("autoclustering")
    if runtime.allow_growth is not None:
        gpus = machine.physical_gpus() if gpus is None else gpus
        for gpu in gpus:
            _apply("allow_growth", runtime.allow_growth,
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


def sync_after_step(runtime):
    """--sync_on_finish: a function that waits until every device has finished
    the step's work (GPU kernels run after the step's call returns), called
    inside the timed step; None when off."""
    if not runtime.sync_on_finish:
        return None
    import tensorflow as tf  # deferred: the command line imports this before TensorFlow
    return tf.test.experimental.sync_devices
