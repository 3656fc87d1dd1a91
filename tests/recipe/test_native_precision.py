"""--use_fp16/--use_bf16 where the devices only emulate them: refused before any
step unless --allow_emulated_precision, and the header says which it is. The
capability probe is replaced, so both answers are tested on any machine."""
import numpy as np
import pytest

from towertrain import Params, Trainer
from towertrain.errors import ParamsError
from towertrain.input_pipeline import from_arrays
from towertrain.recipe import native_precision

import helpers.cli


def _arrays():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((16, 32, 32, 3)).astype(np.float32),
            rng.integers(0, 10, 16).astype(np.int32))


def _params(**kw):
    return Params(model="trivial", device="cpu", num_gpus=1, num_batches=1,
                  num_warmup_batches=0, **kw)


def _probe(native, why="a test's answer"):
    return lambda device, dtype: native_precision.Support(native, why)


@pytest.mark.parametrize("flag,slowdown", [("use_bf16", "0.07x"), ("use_fp16", "~100x")])
def test_an_emulated_precision_is_refused_with_its_measured_slowdown(monkeypatch, flag,
                                                                     slowdown):
    monkeypatch.setattr(native_precision, "probe", _probe(False))
    with pytest.raises(ParamsError) as refused:
        Trainer(_params(**{flag: True}), input_source=from_arrays(*_arrays(), 8))
    message = str(refused.value)
    assert message.startswith(f"--{flag}: ")
    assert "emulated on cpu" in message and slowdown in message
    assert "--allow_emulated_precision" in message


def test_an_emulated_precision_runs_when_allowed_and_the_header_says_so(monkeypatch):
    monkeypatch.setattr(native_precision, "probe", _probe(False, "no bf16 here"))
    trainer = Trainer(_params(use_bf16=True, allow_emulated_precision=True),
                      input_source=from_arrays(*_arrays(), 8))
    precision = dict(trainer.header_info())["Precision"]
    assert precision[1].startswith("EMULATED on cpu (no bf16 here)"), precision
    trainer.close()


def test_a_native_precision_runs_and_the_header_says_so(monkeypatch):
    monkeypatch.setattr(native_precision, "probe", _probe(True, "CPU has amx_bf16"))
    trainer = Trainer(_params(use_bf16=True), input_source=from_arrays(*_arrays(), 8))
    assert dict(trainer.header_info())["Precision"][1] == (
        "runs natively on cpu (CPU has amx_bf16)")
    trainer.close()


def test_float32_never_asks_the_probe(monkeypatch):
    def probe(device, dtype):
        raise AssertionError("asked")
    monkeypatch.setattr(native_precision, "probe", probe)
    Trainer(_params(), input_source=from_arrays(*_arrays(), 8)).close()


@pytest.mark.parametrize("flags,native", [({"avx512_bf16", "avx2"}, True),
                                          ({"amx_bf16"}, True), ({"avx2", "avx512f"}, False)])
def test_the_cpu_probe_reads_the_bf16_flags(monkeypatch, flags, native):
    monkeypatch.setattr(native_precision, "_cpu_flags", lambda: set(flags))
    assert native_precision._probe_machine("cpu", "bfloat16").native is native
    assert not native_precision._probe_machine("cpu", "float16").native  # never on a CPU


def test_the_cli_refuses_fp16_on_cpu_before_any_step():
    base = ("--model=trivial", "--device=cpu", "--use_fp16", "--num_batches=1",
            "--num_warmup_batches=0")
    refused = helpers.cli.run_cli(*base)
    assert refused.returncode == 2, refused.stderr
    assert "towertrain: error: --use_fp16: float16 is emulated on cpu" in refused.stderr
    assert "~100x slower" in refused.stderr and "images/sec" not in refused.stdout
