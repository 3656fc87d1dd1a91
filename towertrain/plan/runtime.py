"""The process settings of a run, worked out before TensorFlow starts: the
environment an OpenMP runtime and XLA read as they load, and the intra-op
thread pool (towertrain.engine.process.runtime applies them)."""
import os

XLA_CPU_FLAG = "--tf_xla_cpu_global_jit"  # auto-clustering on CPU needs it too


def environment(mkl=False, kmp_blocktime=0, kmp_settings=1, kmp_affinity="",
                num_intra_threads=None, xla=False, device=None, environ=None):
    """The environment variables these settings set: with --mkl,
    tf_cnn_benchmarks' KMP_BLOCKTIME, KMP_SETTINGS, KMP_AFFINITY and
    OMP_NUM_THREADS (from --num_intra_threads, when given); with --xla on CPU
    devices, TF_XLA_FLAGS gains --tf_xla_cpu_global_jit (TensorFlow reads it
    when it first lists its devices: measured, TF 2.21). device: --device as
    given (None: unset, which may still be a GPU machine: there CPU ops
    cluster too)."""
    environ = os.environ if environ is None else environ
    env = {}
    if mkl:
        env.update(KMP_BLOCKTIME=str(kmp_blocktime), KMP_SETTINGS=str(kmp_settings),
                   KMP_AFFINITY=kmp_affinity)
        if num_intra_threads:
            env["OMP_NUM_THREADS"] = str(num_intra_threads)
    if xla and device != "gpu":
        flags = environ.get("TF_XLA_FLAGS", "")
        if XLA_CPU_FLAG not in flags.split():
            env["TF_XLA_FLAGS"] = f"{flags} {XLA_CPU_FLAG}".strip()
    return env


ENVIRONMENT_SETTINGS = ("mkl", "kmp_blocktime", "kmp_settings", "kmp_affinity",
                        "num_intra_threads", "xla", "device")


def intra_op_threads(num_intra_threads, device, workers_on_host, cores, towers):
    """--num_intra_threads; unset, 1 on GPUs (tf_cnn_benchmarks: GPU kernels
    need no intra-op pool); on CPUs whose cores run more than one tower at a
    time (towers of this process, or workers sharing this host), each tower's
    share of the cores: the towers' ops already run side by side, and one op
    split over every core only adds its threads' hand-offs. Measured on 2
    cores (bench/bench_threads.py: resnet20, 16 per device, replicated, 5
    interleaved rounds): 1 thread instead of 2 ran 1.17x at 2 towers, 1.29x
    at 4 and 1.15x at 8; a lone tower ran 0.95x with 1, so it keeps
    TensorFlow's choice (None). Workers on one host likewise: 2 workers x 1
    device on 2 cores ran 0.91x of one process with both devices with every
    core each, 1.01x with 1 thread each."""
    if num_intra_threads is not None:
        return num_intra_threads
    if device == "gpu":
        return 1
    sharing = workers_on_host * towers
    if sharing > 1:
        return max(1, cores // sharing)
    return None


def threads_reason(num_intra_threads, device, workers_on_host, cores, towers):
    """Why the intra-op pool has its size, for the header's Threads line of a
    run whose towers share this host's CPU cores (None otherwise)."""
    if device == "gpu" or workers_on_host * towers < 2:
        return None
    if num_intra_threads is not None:
        return "--num_intra_threads"
    if workers_on_host > 1 and towers > 1:
        share = f"({workers_on_host} workers x {towers} towers) on this host"
    elif workers_on_host > 1:
        share = f"{workers_on_host} workers on this host"
    else:
        share = f"{towers} towers"
    return f"{cores} cores / {share}; --num_intra_threads sets it"


def describe_pool(threads):
    """An intra-op pool as TensorFlow reports it (0: its own choice)."""
    return str(threads) if threads else "TensorFlow's choice (every core)"
