"""Compute devices: real GPUs, N logical GPUs splitting one GPU, or N logical
CPU devices carved from the host.

Logical devices can only be configured before TensorFlow initializes its
runtime; a process that already configured more than it needs uses a prefix.
"""
import os
import subprocess
from typing import Optional

import tensorflow as tf
from towertrain import private_api
from towertrain.config import gpu_share
from towertrain.config import machine
from towertrain.engine.process import nccl_library
from towertrain.errors import DeviceError  # noqa: F401 - raised here

# The share of a split GPU's memory its logical GPUs divide: the CUDA context,
# cuDNN and cuBLAS workspaces live outside TensorFlow's pool.
SPLIT_MEMORY_SHARE = 0.9
# Each logical GPU's memory when nvidia-smi cannot say the GPU's (MB).
SPLIT_MEMORY_FALLBACK_MB = 4096

# Device nodes that exist when a GPU driver is loaded, whatever TensorFlow sees.
GPU_DEVICE_NODES = ("/dev/nvidia0", "/dev/kfd")


def num_physical_gpus() -> int:
    return len(machine.physical_gpus())


def gpu_hardware_present() -> bool:
    return any(os.path.exists(node) for node in GPU_DEVICE_NODES)


def why_gpus_are_missing() -> str:
    """Why TensorFlow lists no GPU: no driver, a CPU-only TensorFlow on a
    machine with a GPU (the [cpu] extra installs one), or a GPU build that could
    not load its CUDA libraries. '' when TensorFlow does list GPUs."""
    cpu_only = not (tf.test.is_built_with_cuda() or tf.test.is_built_with_rocm())
    if not gpu_hardware_present():
        return "no GPU driver is loaded" + (", and this TensorFlow is CPU-only" if cpu_only
                                           else "")
    if cpu_only:
        return ("this machine has a GPU, but this TensorFlow is the CPU-only build "
                "tensorflow-cpu: install towertrain's [gpu] extra, tensorflow[and-cuda]")
    if not num_physical_gpus():
        return ("a GPU driver is loaded, but this TensorFlow found no usable GPU: its CUDA "
                "libraries are missing or do not match the driver; TF_CPP_MIN_LOG_LEVEL=0 "
                "logs each library it could not open")
    return ""


def no_gpu_note() -> str:
    """' (why_gpus_are_missing())' for an error that says no GPU is present, or ''."""
    reason = why_gpus_are_missing()
    return f" ({reason})" if reason else ""


def ensure_logical_cpus(count: int) -> None:
    """Makes at least `count` logical CPU devices visible, or raises DeviceError."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    configured = tf.config.get_logical_device_configuration(cpu)
    if configured is not None and len(configured) >= count:
        return
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)])
    except RuntimeError as err:  # runtime already initialized
        have = len(tf.config.list_logical_devices("CPU"))
        if have >= count:
            return
        raise DeviceError(
            f"--num_gpus={count}: this process already initialized TensorFlow with "
            f"{have} CPU device(s); configure {count} logical CPUs before any op runs "
            f"(towertrain.use_logical_cpus({count}) first thing)") from err


def check_implicit_cpu_towers(device, count: int) -> None:
    """--num_gpus=N without --device on a machine without GPUs: a
    tf_cnn_benchmarks command copied onto a laptop. Building N logical CPU
    towers silently is not what it asked for; say how to ask for them."""
    if device is None and count > 1 and not num_physical_gpus():
        raise DeviceError(f"--num_gpus={count}: no GPU is present"
                          f"{no_gpu_note()} and --device is not given; "
                          f"add --device=cpu to train on {count} logical CPU towers, or "
                          "--num_gpus=1")


def gpu_memory_mb():
    """The memory of the process's first GPU in MB as nvidia-smi reports it,
    or None without nvidia-smi (TensorFlow says it only once its runtime runs)."""
    first = (os.environ.get(gpu_share.VISIBLE) or "0").split(",")[0].strip()
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total",
                              "--format=csv,noheader,nounits", "-i", first],
                             capture_output=True, text=True, timeout=30, check=True).stdout
        return int(out.split()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def logical_gpu_memory_mb(count, total_mb):
    """Each of `count` logical GPUs' memory limit on a GPU of total_mb."""
    if total_mb is None:
        return SPLIT_MEMORY_FALLBACK_MB
    return int(total_mb * SPLIT_MEMORY_SHARE) // count


def split_gpu(count: int) -> None:
    """--num_gpus=count on a machine with one GPU: splits it into `count`
    logical GPUs with an equal share of its memory
    (tf.config.set_logical_device_configuration), as --device=cpu splits the
    host; before TensorFlow's runtime starts, or DeviceError."""
    gpu = machine.physical_gpus()[0]
    configured = tf.config.get_logical_device_configuration(gpu)
    if configured is not None and len(configured) >= count:
        return
    limit = logical_gpu_memory_mb(count, gpu_memory_mb())
    try:
        tf.config.set_logical_device_configuration(
            gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=limit)] * count)
    except RuntimeError as err:  # runtime already initialized
        raise DeviceError(
            f"--num_gpus={count}: this process already initialized TensorFlow with its "
            f"one GPU whole; split it into {count} logical GPUs before any op runs (build "
            "the Trainer first)") from err


def logical_gpus_per_gpu() -> int:
    """How many logical GPUs this process split its first GPU into (1: whole)."""
    gpus = machine.physical_gpus()
    configured = tf.config.get_logical_device_configuration(gpus[0]) if gpus else None
    return len(configured) if configured else 1


def describe_split(topology) -> str:
    """The header's note on towers that are logical GPUs of one GPU, or ''."""
    split = logical_gpus_per_gpu() if topology.device == "gpu" else 1
    if split < 2:
        return ""
    limit = tf.config.get_logical_device_configuration(machine.physical_gpus()[0])[0]
    return (f" (logical GPUs: GPU 0 split into {split}, {limit.memory_limit} MB each; "
            "no NCCL between them)")


def check_split_gpu_exchange(topology, exchange) -> None:
    """An exchange through NCCL across towers that are logical GPUs of one GPU
    is refused before anything is built: NCCL refuses two ranks on one GPU
    (TensorFlow's collectives would fail or wait), so psgpu or ring it is."""
    split = logical_gpus_per_gpu() if topology.device == "gpu" else 1
    if split < 2 or topology.num_towers < 2:
        return
    if exchange.local_algorithm in ("nccl", "scatter"):
        culprit = exchange.spec_flag
    elif (exchange.cross_algorithm == "collective"
          and exchange.collective_implementation == "nccl"):
        culprit = (f"{exchange.spec_flag} with NCCL collectives "
                   "(--collective_implementation=auto or nccl)")
    else:
        return
    raise DeviceError(
        f"{culprit}: the {topology.num_towers} towers are logical GPUs of one GPU (split "
        f"into {split}), and NCCL refuses two ranks on one GPU; use --all_reduce_spec="
        "psgpu or ring (replicated), or psgpu/xring or collective with "
        "--collective_implementation=ring (collective_all_reduce)")


def nccl_culprit(topology, exchange):
    """The setting through which this run's exchange runs NCCL ('--flag=value
    ...'), or None: NCCL sums between GPUs only, and only where there is
    more than one to sum over."""
    if topology.device != "gpu":
        return None
    towers, workers = topology.num_towers, topology.num_workers
    local = exchange.local_algorithm
    if exchange.variable_update == "replicated":
        return exchange.spec_flag if local == "nccl" and towers > 1 else None
    if exchange.variable_update != "collective_all_reduce":
        return None
    if local in ("nccl", "scatter") and towers > 1:
        return exchange.spec_flag
    if exchange.collective_implementation != "nccl" or local == "pscpu":
        return None  # a CPU member crosses workers by ring
    if workers > 1 or (local is None and towers > 1):
        return (f"{exchange.spec_flag} with NCCL collectives "
                "(--collective_implementation=auto or nccl)")
    return None


def check_nccl(topology, exchange) -> None:
    """An exchange through NCCL where TensorFlow cannot load libnccl is
    refused before anything is built: it would fail at its first step."""
    culprit = nccl_culprit(topology, exchange)
    if culprit and not nccl_library.has_nccl():
        raise DeviceError(nccl_library.missing_message(culprit))


def check_own_gpus(cluster, environ=None) -> None:
    """A worker sharing its machine with other workers of its cluster must see
    only GPUs of its own: TensorFlow maps every GPU it sees, --gpu_indices
    only picks towers among them (out of memory; NCCL refuses two ranks on
    one GPU). towertrain.launch and Slurm set CUDA_VISIBLE_DEVICES per worker."""
    environ = os.environ if environ is None else environ
    others = cluster.workers_on_this_host() - 1
    if others and gpu_share.VISIBLE not in environ:
        raise DeviceError(
            f"--device=gpu: {others} other worker(s) of this cluster run on this machine "
            f"({cluster.address}) and this one sees every GPU ({gpu_share.VISIBLE} is not "
            "set), so they would share GPUs; start them with python -m towertrain.launch "
            f"or srun, which give each its own, or set {gpu_share.VISIBLE} per worker")


def tower_devices(device: str, count: int, check: bool = True, indices=None) -> list:
    """Device names for `count` towers, e.g. ['/cpu:0', '/cpu:1'].

    check=False skips making the devices exist, for tracing a GPU graph on a
    machine without GPUs (placement tests). indices: the devices' numbers in
    tower order (--gpu_indices; default 0..count-1).
    """
    indices = list(range(count)) if indices is None else list(indices)
    if not check:
        # Variables for absent devices fall back to the CPU through soft
        # placement. TF 2.21 stops applying it to eager ops once a multi-device
        # function has run, although the getter still says True; setting it
        # again re-applies it.
        tf.config.set_soft_device_placement(True)
    if check and device == "cpu":
        ensure_logical_cpus(count)
    if check and device == "gpu":
        present = num_physical_gpus()
        if present == 1 and count > 1:
            split_gpu(count)  # logical GPUs: the towers run as on as many GPUs
            present = count
        if count > present:
            note = "" if present else no_gpu_note()
            raise DeviceError(f"--num_gpus={count}: only {present} GPU(s) present"
                              f"{note}; lower --num_gpus or use --device=cpu "
                              "(logical CPU devices)")
        if max(indices) >= present:
            raise DeviceError(f"--gpu_indices={','.join(map(str, indices))}: GPU "
                              f"{max(indices)} does not exist ({present} present: 0.."
                              f"{present - 1})")
    return [f"/{device}:{i}" for i in indices]


def prepare(topology, check: bool = True) -> list:
    """The plan's tower devices, checked and made to exist (logical CPUs); with
    check=False only named, to trace a GPU graph anywhere (tower_devices)."""
    if check:
        check_implicit_cpu_towers(topology.device if topology.device_given else None,
                                  topology.num_towers)
        if topology.device == "gpu":
            check_own_gpus(topology.cluster)
    return tower_devices(topology.device, topology.num_towers, check=check,
                         indices=topology.gpu_indices)


def check_half_precision_layout(device: str, data_format: str, half: Optional[str]) -> None:
    """TensorFlow's CPU float16 convolution gradients (Conv2DCustomBackprop*Op)
    support only NHWC: tf_cnn_benchmarks' own --data_format=NCHW --use_fp16 line
    with --device=cpu fails at the first step, so it is refused up front
    (bfloat16 NCHW runs: measured with TF 2.21). half: the run's
    half-precision dtype, None in float32."""
    if device == "cpu" and data_format == "NCHW" and half == "float16":
        raise DeviceError(
            "--data_format=NCHW with --use_fp16 on --device=cpu: TensorFlow's CPU float16 "
            "convolution gradients support only NHWC (Conv2DCustomBackpropInputOp only "
            "supports NHWC), so the first step would fail; use --data_format=NHWC (the CPU "
            "default) or drop --use_fp16")


def check_data_format(device: str, data_format: str) -> None:
    """NCHW on a CPU needs TensorFlow's oneDNN kernels; without them the first
    backward convolution fails deep inside the step, so say it up front."""
    if device != "cpu" or data_format != "NCHW":
        return
    if not private_api.onednn_enabled():
        raise DeviceError(
            "--data_format=NCHW with --device=cpu: needs TensorFlow's oneDNN kernels, "
            "which are off in this process; set TF_ENABLE_ONEDNN_OPTS=1 before TensorFlow "
            "is imported (import towertrain first does it), or use --data_format=NHWC")
