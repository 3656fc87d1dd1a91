"""Compute devices: real GPUs, or N logical CPU devices carved from the host.

Logical CPU devices can only be configured before TensorFlow initializes its
runtime; a process that already configured more than it needs uses a prefix.
"""
import os

import tensorflow as tf
from towertrain.config import machine
from towertrain.errors import DeviceError  # noqa: F401 - raised here

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
    return tower_devices(topology.device, topology.num_towers, check=check,
                         indices=topology.gpu_indices)


def check_half_precision_layout(device: str, data_format: str, use_fp16: bool) -> None:
    """TensorFlow's CPU float16 convolution gradients (Conv2DCustomBackprop*Op)
    support only NHWC: tf_cnn_benchmarks' own --data_format=NCHW --use_fp16 line
    with --device=cpu fails at the first step, so it is refused up front
    (bfloat16 NCHW runs: measured with TF 2.21)."""
    if device == "cpu" and data_format == "NCHW" and use_fp16:
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
    from towertrain import private_api
    if not private_api.onednn_enabled():
        raise DeviceError(
            "--data_format=NCHW with --device=cpu: needs TensorFlow's oneDNN kernels, "
            "which are off in this process; set TF_ENABLE_ONEDNN_OPTS=1 before TensorFlow "
            "is imported (import towertrain first does it), or use --data_format=NHWC")
