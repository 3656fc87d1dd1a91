"""The process's settings, declared beside the code that applies them
(towertrain.engine.process.runtime: threads, the MKL/OpenMP environment, XLA,
GPU memory; towertrain.engine.process.devices: the towers' devices), with
their refusals, and the plan's Runtime section worked out from them before
TensorFlow starts: the environment an OpenMP runtime and XLA read as they
load, and the intra-op thread pool.

Pure Python: the command line sets the environment from these before
TensorFlow loads (towertrain.commands.train).
"""
import dataclasses
import os
from typing import Optional, Tuple

from towertrain.config.declare import NOT_USED, PER_CONFIGURATION, section, setting, tfcnn

DEVICES = ("cpu", "gpu")
DATA_FORMATS = ("NCHW", "NHWC")
# Each tower is a device with its own copy of the model's step; 256 CPU towers
# take a minute to build, far more would seem to hang.
MAX_TOWERS = 4096
XLA_CPU_FLAG = "--tf_xla_cpu_global_jit"  # auto-clustering on CPU needs it too
# The flags the environment is worked out from (the command line reads them
# before Params exists, to set it before TensorFlow loads).
ENVIRONMENT_SETTINGS = ("mkl", "kmp_blocktime", "kmp_settings", "kmp_affinity",
                        "num_intra_threads", "xla", "device")


@section("Runtime and threads")
class ProcessSettings:
    num_intra_threads: Optional[int] = setting(
        None, "Threads of TensorFlow's intra-op pool; 0: TensorFlow picks (default: "
        "1 on GPUs; on CPUs running more than one tower at a time, the cores "
        "divided among this process's towers and the cluster's workers on "
        "this host, at least 1 (measured on 2 cores: 1.15-1.29x at 2-8 "
        "towers); one tower: TensorFlow's choice).",
        tfcnn=tfcnn("integer", None, "default: 1 on gpu; on cpu, the cores / the towers and "
                    "workers on this host"))
    num_inter_threads: int = setting(
        0, "Threads of TensorFlow's inter-op pool; 0: TensorFlow picks.",
        tfcnn=tfcnn("integer", 0))
    mkl: bool = setting(
        False, "Set the MKL/OpenMP environment before TensorFlow loads: "
        "KMP_BLOCKTIME, KMP_SETTINGS, KMP_AFFINITY, and OMP_NUM_THREADS from "
        "--num_intra_threads. Only OpenMP builds of TensorFlow (Intel's) read "
        "them.",
        scaling=NOT_USED, tfcnn=tfcnn("boolean", False))
    kmp_blocktime: int = setting(
        0, "With --mkl: KMP_BLOCKTIME, milliseconds a thread waits after a "
        "parallel region before sleeping.",
        scaling=NOT_USED, tfcnn=tfcnn("integer", 0))
    kmp_affinity: str = setting(
        "granularity=fine,verbose,compact,1,0", "With --mkl: KMP_AFFINITY, which cores OpenMP "
        "threads are bound to.",
        scaling=NOT_USED, tfcnn=tfcnn("string", "granularity=fine,verbose,compact,1,0"))
    kmp_settings: int = setting(
        1, "With --mkl: KMP_SETTINGS; 1 prints the OpenMP settings when it "
        "loads.",
        scaling=NOT_USED, tfcnn=tfcnn("integer", 1))
    allow_growth: Optional[bool] = setting(
        None, "GPU memory growth (tf.config.experimental.set_memory_growth on every "
        "GPU): allocate as needed instead of all at start (default: "
        "TensorFlow's, all at start); GPUs only.",
        tfcnn=tfcnn("boolean", None))
    sync_on_finish: bool = setting(
        False, "Wait for every device to finish its work at the end of each step "
        "(inside the step's time).",
        training_only=True, tfcnn=tfcnn("boolean", False))
    step_timeout_secs: Optional[float] = setting(
        None, "A training step that runs longer than this many seconds (a hung "
        "collective, peer or kernel) ends the process with exit status 1 and "
        "one line naming the step and its phase (multi-worker, also the "
        "workers that never reached its exchange), so a launcher restarts from "
        "the last checkpoint; watched from the second step of a process on "
        "(the first traces); 0: no watch (default: 10x the slowest step after "
        "warm-up, at least 300).",
        training_only=True, scaling=NOT_USED)
    xla_compile: bool = setting(
        False, "Compile each tower's forward and backward with XLA.",
        group="Precision and speed",
        tfcnn=tfcnn("boolean", False, "compiles each tower's forward and backward"))
    xla: bool = setting(
        False, "XLA auto-clustering (tf.config.optimizer.set_jit): TensorFlow "
        "compiles the clusters of the step it can and runs the rest as usual; "
        "unless --device=gpu it also sets "
        "TF_XLA_FLAGS=--tf_xla_cpu_global_jit before TensorFlow lists its "
        "devices.",
        group="Precision and speed", scaling=NOT_USED, tfcnn=tfcnn("boolean", False))

    @staticmethod
    def refuse(p, fail):
        for flag in ("num_intra_threads", "num_inter_threads", "kmp_blocktime", "kmp_settings"):
            value = getattr(p, flag)
            if value is not None and value < 0:
                fail(flag, value, "must be >= 0")
        if p.step_timeout_secs is not None and not p.step_timeout_secs >= 0:
            fail("step_timeout_secs", p.step_timeout_secs, "must be >= 0 seconds (0: no watch "
                 "of the steps)")
        if p.allow_growth is not None and p.resolved_device != "gpu":
            fail("allow_growth", p.allow_growth, "sets GPU memory growth; CPU devices have "
                 "none to set (use it with --device=gpu, or drop it)")

    @staticmethod
    def refuse_given(p, explicit, fail):
        """Flags given on the command line (`explicit`) that the run would ignore."""
        if not p.mkl:
            for flag in ("kmp_blocktime", "kmp_affinity", "kmp_settings"):
                if flag in explicit:
                    fail(flag, getattr(p, flag), "only applies with --mkl (it sets the "
                         "OpenMP environment then)")


@section("Devices and variables")
class Devices:
    device: Optional[str] = setting(
        None, "Compute device type (default: gpu if one is present, else cpu).",
        choices=DEVICES, case_sensitive=False,
        tfcnn=tfcnn("enum", "gpu", "default: gpu if one is present, else cpu",
                    values=("cpu", "gpu", "CPU", "GPU")))
    num_gpus: int = setting(
        1, "Number of towers: GPUs, or logical CPU devices with --device=cpu.",
        scaling=PER_CONFIGURATION,
        tfcnn=tfcnn("integer", 1, "with --device=cpu: that many logical CPU devices"))
    local_parameter_device: Optional[str] = setting(
        None, "parameter_server only: where the variables live (default: --device).",
        choices=DEVICES, scaling=PER_CONFIGURATION,
        applies_with=("variable_update", ("parameter_server",)), case_sensitive=False,
        tfcnn=tfcnn("enum", "gpu", "default: --device", values=("cpu", "gpu", "CPU", "GPU")))
    gpu_indices: Optional[str] = setting(
        None, "--device=gpu: the physical GPUs the towers run on, in tower order "
        "(the order of the ring all-reduce), e.g. '2,3,0,1'; as many as "
        "--num_gpus (default: 0..num_gpus-1); --eval and --forward_only run "
        "on them too.",
        scaling=NOT_USED,
        tfcnn=tfcnn("string", "", "towertrain: the physical GPUs the towers run on, in tower "
                    "order (the ring's order); tf_cnn_benchmarks only passes it to TF 1's "
                    "collective ring order and always uses the first --num_gpus GPUs",
                    unset=True))
    data_format: Optional[str] = setting(
        None, "Image layout (default: NCHW on gpu, NHWC on cpu).",
        choices=DATA_FORMATS, group="Model and data",
        tfcnn=tfcnn("enum", "NCHW", "default: NCHW on gpu, NHWC on cpu", values=("NHWC", "NCHW")))

    @staticmethod
    def refuse(p, fail):
        if p.num_gpus < 1:
            fail("num_gpus", p.num_gpus, "must be >= 1")
        if p.num_gpus > MAX_TOWERS:
            fail("num_gpus", p.num_gpus, f"must be <= {MAX_TOWERS} (towers of one process)")
        if p.gpu_indices is not None:
            try:
                indices = parse_gpu_indices(p.gpu_indices)
            except ValueError as err:
                fail("gpu_indices", p.gpu_indices, str(err))
            if p.resolved_device != "gpu":
                fail("gpu_indices", p.gpu_indices, "needs --device=gpu (it picks physical "
                     "GPUs)")
            if len(indices) != p.num_gpus:
                fail("gpu_indices", p.gpu_indices, f"lists {len(indices)} GPU(s) for "
                     f"--num_gpus={p.num_gpus} towers; list one GPU per tower")
        # Whether the GPUs exist is checked when devices are set up
        # (towertrain.engine.process.devices.tower_devices), so a GPU graph can be traced
        # anywhere.
        if p.local_parameter_device == "gpu" and p.resolved_device == "cpu":
            fail("local_parameter_device", "gpu",
                 "needs --device=gpu; with --device=cpu use --local_parameter_device=cpu")

    def tower_count(self):
        """How many towers this process runs (one per GPU on --device=gpu)."""
        return self.num_gpus

    @classmethod
    def towers_in_flags(cls, flag_value):
        """How many towers a worker started with some command-line flags runs,
        read from their text before any Params exists (the launcher's):
        flag_value(name) is a flag's last value as given, None when absent.
        The default when absent; 0 when unreadable (the worker refuses it)."""
        text = flag_value("num_gpus")
        try:
            return int(text) if text else cls().tower_count()
        except ValueError:
            return 0

    def indices(self):
        """The towers' device indices: --gpu_indices parsed, else 0..num_gpus-1."""
        return (tuple(parse_gpu_indices(self.gpu_indices)) if self.gpu_indices
                else tuple(range(self.num_gpus)))


def parse_gpu_indices(text):
    """'2,0' -> [2, 0]; ValueError with the reason on a bad list."""
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        raise ValueError("must be comma-separated GPU indices, e.g. 0,1,2,3")
    indices = [int(part) for part in parts]
    if len(set(indices)) != len(indices):
        raise ValueError("lists a GPU twice (one tower per GPU)")
    return indices


@dataclasses.dataclass(frozen=True)
class Runtime:
    """The plan's process section: environment, thread pools, XLA, GPU memory."""
    environment: Tuple[Tuple[str, str], ...]  # variables to set before TensorFlow loads
    num_intra_threads: Optional[int]  # resolved (None: TensorFlow's choice)
    intra_threads_explicit: bool
    num_inter_threads: Optional[int]
    intra_threads_why: Optional[str]  # the header's Threads line (None: no line)
    xla: bool = False
    xla_compile: bool = False
    allow_growth: Optional[bool] = None
    sync_on_finish: bool = False
    step_timeout_secs: Optional[float] = None  # None: automatic, 0: no watch

    @classmethod
    def of(cls, settings, device_given, device, workers_on_host, cores, towers):
        """The section for ProcessSettings `settings` on towers of type `device`
        (device_given: --device as given, None when unset); the cores are
        shared by `towers` towers and `workers_on_host` workers."""
        env = environment(settings.mkl, settings.kmp_blocktime, settings.kmp_settings,
                          settings.kmp_affinity, settings.num_intra_threads, settings.xla,
                          device_given)
        sharing = dict(workers_on_host=workers_on_host, cores=cores, towers=towers)
        threads = settings.num_intra_threads
        return cls(
            environment=tuple(env.items()),  # tf_cnn_benchmarks' order: messages name them so
            num_intra_threads=intra_op_threads(threads, device, **sharing),
            intra_threads_explicit=threads is not None,
            num_inter_threads=settings.num_inter_threads,
            intra_threads_why=threads_reason(threads, device, **sharing),
            xla=settings.xla, xla_compile=settings.xla_compile,
            allow_growth=settings.allow_growth, sync_on_finish=settings.sync_on_finish,
            step_timeout_secs=settings.step_timeout_secs)
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
