"""Whether --use_fp16 / --use_bf16 run natively on the devices in use.

A CPU without half-precision arithmetic emulates it, slowly and silently:
measured here, --use_fp16 on CPU ran resnet20 at 4.7 img/s against ~500 in
float32 (~100x slower), and --use_bf16 on an AMD EPYC without avx512_bf16 ran
at 0.07x float32. So an emulated precision is refused unless the user
confirms it with --allow_emulated_precision, and the header says which it is.

`probe` is the one place that asks the machine; tests replace it
(`native_precision.probe = ...`) to check both answers on any machine.
"""
import collections

import tensorflow as tf

from towertrain.config import machine
from towertrain.errors import ParamsError

# CPU flags (/proc/cpuinfo) with bfloat16 arithmetic: AVX512-BF16 or AMX.
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")
# GPUs: tensor cores for float16 from compute capability 7.0 (Volta), for
# bfloat16 from 8.0 (Ampere); older GPUs run them without a speed-up or emulated.
GPU_MINIMUM = {"float16": (7, 0), "bfloat16": (8, 0)}

Support = collections.namedtuple("Support", "native why")

# What emulation costs, as measured (docs/errors.md).
SLOWDOWN = {
    ("cpu", "float16"): "measured ~100x slower than float32 on CPU (resnet20: 4.7 vs ~500 "
                        "img/s)",
    ("cpu", "bfloat16"): "measured 0.07x the float32 speed on an AMD EPYC without "
                         "avx512_bf16",
    ("gpu", "float16"): "no faster than float32, often slower",
    ("gpu", "bfloat16"): "no faster than float32, often slower",
}


CPUINFO = "/proc/cpuinfo"  # Linux's; elsewhere it is absent and no CPU flag is found


def _cpu_flags():
    try:
        with open(CPUINFO) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _probe_machine(device, dtype):
    """Support(native, why) of `dtype` ('float16' or 'bfloat16') on `device`
    ('cpu' or 'gpu') of this machine."""
    if device == "cpu":
        if dtype == "float16":
            return Support(False, "CPUs have no float16 arithmetic")
        found = sorted(_cpu_flags() & set(BF16_CPU_FLAGS))
        if found:
            return Support(True, f"CPU has {', '.join(found)}")
        return Support(False, "CPU has neither avx512_bf16 nor amx_bf16")
    return gpu_support(dtype, gpu_capabilities())


def gpu_capabilities():
    """(major, minor) compute capability of each GPU in use, None where
    TensorFlow does not say."""
    capabilities = []
    for gpu in machine.physical_gpus():
        found = tf.config.experimental.get_device_details(gpu).get("compute_capability")
        capabilities.append(None if found is None else tuple(found))
    return capabilities


def gpu_support(dtype, capabilities):
    """Support of `dtype` on GPUs of these capabilities: native only when every
    one has it (a run is as fast as its slowest tower)."""
    wanted = GPU_MINIMUM[dtype]
    for capability in capabilities:
        if capability is None or tuple(capability) < wanted:
            have = "unknown" if capability is None else f"{capability[0]}.{capability[1]}"
            return Support(False, f"GPU compute capability {have} (native {dtype} needs "
                                  f"{wanted[0]}.{wanted[1]})")
    return Support(True, f"GPU compute capability >= {wanted[0]}.{wanted[1]}")


probe = _probe_machine


def check(precision, device):
    """Support of the run's half precision (the plan's Precision section) on
    `device`, or None (float32); raises ParamsError when it is emulated and
    not allowed."""
    dtype = precision.half
    if dtype is None:
        return None
    support = probe(device, dtype)
    if not support.native and not precision.allow_emulated_precision:
        flag = precision.flag
        raise ParamsError(
            f"--{flag}: {dtype} is emulated on {device} here ({support.why}): "
            f"{SLOWDOWN[(device, dtype)]}; drop --{flag}, or add "
            "--allow_emulated_precision to run it anyway")
    return support


def describe(support, device):
    """The header's words for a checked precision."""
    if support.native:
        return f"runs natively on {device} ({support.why})"
    return (f"EMULATED on {device} ({support.why}), allowed by --allow_emulated_precision: "
            "expect it much slower than float32")
