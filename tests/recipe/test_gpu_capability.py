"""docs: half precision runs natively from "compute capability 7.0 for float16
and 8.0 for bfloat16 on a GPU". The GPU branch of the probe runs here with an
injected device description (the GPU list and TensorFlow's device details), so
each threshold is tested at, just below and just above it on any machine."""
import pytest
import tensorflow as tf

from towertrain import Params, ParamsError
from towertrain.config import machine
from towertrain.config.declare import take
from towertrain.recipe import native_precision
from towertrain.recipe.settings import Precision


@pytest.fixture
def gpus(monkeypatch):
    """gpus(*capabilities): this machine's GPUs now have these capabilities
    ((major, minor), or None where TensorFlow gives none)."""
    def install(*capabilities):
        devices = tuple(f"PhysicalDevice(GPU:{i})" for i in range(len(capabilities)))
        details = {device: ({} if cap is None else {"compute_capability": cap})
                   for device, cap in zip(devices, capabilities)}
        monkeypatch.setattr(machine, "physical_gpus", lambda: devices)
        monkeypatch.setattr(tf.config.experimental, "get_device_details",
                            lambda device: details[device])
    return install


def _precision(**flags):
    """The run plan's Precision section of a run with these flags."""
    return take(Precision, Params(model="trivial", **flags))


def _check(**flags):
    return native_precision.check(_precision(**flags), "gpu")


@pytest.mark.parametrize("flag,dtype,native,emulated", [
    ("use_fp16", "float16", [(7, 0), (7, 5), (8, 0)], [(6, 1), (6, 9), (5, 0)]),
    ("use_bf16", "bfloat16", [(8, 0), (8, 6), (9, 0)], [(7, 5), (7, 9), (7, 0)]),
])
def test_each_precision_is_native_from_its_capability_on(gpus, flag, dtype, native, emulated):
    minimum = native_precision.GPU_MINIMUM[dtype]
    for capability in native:  # at the threshold and above
        gpus(capability)
        support = _check(**{flag: True})
        assert support.native, capability
        assert support.why == f"GPU compute capability >= {minimum[0]}.{minimum[1]}"
    for capability in emulated:  # just below
        gpus(capability)
        with pytest.raises(ParamsError) as refused:
            _check(**{flag: True})
        assert str(refused.value) == (
            f"--{flag}: {dtype} is emulated on gpu here (GPU compute capability "
            f"{capability[0]}.{capability[1]} (native {dtype} needs {minimum[0]}.{minimum[1]})"
            f"): no faster than float32, often slower; drop --{flag}, or add "
            "--allow_emulated_precision to run it anyway")
        allowed = _check(**{flag: True, "allow_emulated_precision": True})
        assert not allowed.native and allowed.why.startswith(
            f"GPU compute capability {capability[0]}.{capability[1]} ")


def test_the_thresholds_are_the_readme_s():
    assert native_precision.GPU_MINIMUM == {"float16": (7, 0), "bfloat16": (8, 0)}


def test_one_slow_or_unknown_gpu_makes_the_run_emulated(gpus):
    gpus((8, 0), (7, 0))
    assert _check(use_fp16=True).native
    assert not _check(use_bf16=True, allow_emulated_precision=True).native
    gpus((8, 0), None)
    support = _check(use_fp16=True, allow_emulated_precision=True)
    assert support == (False, "GPU compute capability unknown (native float16 needs 7.0)")


def test_float32_asks_no_gpu(gpus):
    gpus(None)
    assert _check() is None


# The CPU side: the description is /proc/cpuinfo, injected as a file.
CPUINFO = "processor\t: {n}\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx2 {extra}\n\n"


@pytest.mark.parametrize("extra,native", [("avx512_bf16", True), ("amx_bf16 amx_tile", True),
                                          ("avx512f", False)])
def test_bfloat16_on_cpu_is_native_with_its_cpuinfo_flags(tmp_path, monkeypatch, extra, native):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(CPUINFO.format(n=0, extra=extra) + CPUINFO.format(n=1, extra=extra))
    monkeypatch.setattr(native_precision, "CPUINFO", str(cpuinfo))
    device = "".join(["c", "p", "u"])  # a string made at run time, as parsed flags are
    if native:
        support = native_precision.check(_precision(use_bf16=True), device)
        assert support == (True, f"CPU has {', '.join(sorted(extra.split()[:1]))}")
    else:
        with pytest.raises(ParamsError, match=r"^--use_bf16: bfloat16 is emulated on cpu here "
                                              r"\(CPU has neither avx512_bf16 nor amx_bf16\)"):
            native_precision.check(_precision(use_bf16=True), device)
    with pytest.raises(ParamsError, match=r"^--use_fp16: float16 is emulated on cpu here "
                                          r"\(CPUs have no float16 arithmetic\)"):
        native_precision.check(_precision(use_fp16=True), device)


def test_without_cpuinfo_no_cpu_flag_is_assumed(tmp_path, monkeypatch):
    monkeypatch.setattr(native_precision, "CPUINFO", str(tmp_path / "absent"))
    support = native_precision.check(
        _precision(use_bf16=True, allow_emulated_precision=True), "cpu")
    assert support == (False, "CPU has neither avx512_bf16 nor amx_bf16")
