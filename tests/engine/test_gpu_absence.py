"""Why no GPU is there, said where a run needs one: a machine without a driver,
a GPU machine with the CPU-only TensorFlow (the [cpu] extra), or a GPU build
whose CUDA libraries did not load. Each cause is simulated by what it changes:
the driver's device node, the build flags, the GPUs TensorFlow lists."""
import pytest
import tensorflow as tf

import helpers.cli
from helpers import bench_scripts
from towertrain.engine.process import devices


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """Sets (driver node present?, CUDA build?, GPUs TensorFlow lists)."""
    def set_up(driver, cuda_build, gpus=0):
        node = tmp_path / "nvidia0"
        if driver:
            node.touch()
        else:
            node.unlink(missing_ok=True)
        monkeypatch.setattr(devices, "GPU_DEVICE_NODES", (str(node),))
        monkeypatch.setattr(tf.test, "is_built_with_cuda", lambda: cuda_build)
        monkeypatch.setattr(tf.test, "is_built_with_rocm", lambda: False)
        monkeypatch.setattr(devices, "num_physical_gpus", lambda: gpus)
    return set_up


def test_the_driver_node_is_what_says_a_gpu_is_there(machine):
    machine(driver=True, cuda_build=False)
    assert devices.gpu_hardware_present()
    machine(driver=False, cuda_build=False)
    assert not devices.gpu_hardware_present()


@pytest.mark.parametrize("driver,cuda_build,gpus,reason", [
    (False, False, 0, "no GPU driver is loaded, and this TensorFlow is CPU-only"),
    (False, True, 0, "no GPU driver is loaded"),
    (True, False, 0, "this machine has a GPU, but this TensorFlow is the CPU-only build "
                     "tensorflow-cpu: install towertrain's [gpu] extra, tensorflow[and-cuda]"),
    (True, True, 0, "a GPU driver is loaded, but this TensorFlow found no usable GPU: its "
                    "CUDA libraries are missing or do not match the driver"),
    (True, True, 2, ""),
])
def test_each_cause_is_named(machine, driver, cuda_build, gpus, reason):
    machine(driver, cuda_build, gpus)
    assert devices.why_gpus_are_missing().startswith(reason)
    assert bool(devices.why_gpus_are_missing()) == bool(reason)


def test_asking_for_gpus_on_a_gpu_machine_with_tensorflow_cpu_says_to_install_the_gpu_extra(
        machine):
    machine(driver=True, cuda_build=False)
    with pytest.raises(devices.DeviceError) as raised:
        devices.tower_devices("gpu", 2)
    assert str(raised.value) == (
        "--num_gpus=2: only 0 GPU(s) present (this machine has a GPU, but this TensorFlow is "
        "the CPU-only build tensorflow-cpu: install towertrain's [gpu] extra, "
        "tensorflow[and-cuda]); lower --num_gpus or use --device=cpu (logical CPU devices)")


def test_fewer_gpus_than_asked_names_no_cause(machine):
    machine(driver=True, cuda_build=True, gpus=2)
    with pytest.raises(devices.DeviceError) as raised:
        devices.tower_devices("gpu", 4)
    assert str(raised.value).startswith("--num_gpus=4: only 2 GPU(s) present; lower")


def test_the_gpu_proof_fails_on_a_gpu_machine_that_tensorflow_cannot_use(machine, capsys):
    # Tracing there and exiting 0 would pass a machine that proved nothing.
    machine(driver=True, cuda_build=True)
    assert bench_scripts.load("gpu_proof").main(["--model=trivial", "--batch_size=2", "--steps=1"]) == 1
    out = capsys.readouterr().out
    assert out == ("a GPU is present but TensorFlow cannot use it: a GPU driver is loaded, but "
                   "this TensorFlow found no usable GPU: its CUDA libraries are missing or do "
                   "not match the driver; TF_CPP_MIN_LOG_LEVEL=0 logs each library it could "
                   "not open. Nothing was proved.\n")


@pytest.mark.skipif(tf.test.is_built_with_cuda() or devices.gpu_hardware_present(),
                    reason="the message below is the one for tensorflow-cpu without a driver")
def test_the_cli_says_why_no_gpu_is_there():
    refused = helpers.cli.run_cli("--device=gpu", "--num_gpus=2", "--num_batches=1")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == (
        "towertrain: error: --num_gpus=2: only 0 GPU(s) present (no GPU driver is loaded, and "
        "this TensorFlow is CPU-only); lower --num_gpus or use --device=cpu (logical CPU "
        "devices)\n")
