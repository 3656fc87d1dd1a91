"""Out of memory in a step is one line in the run's terms:
the batch per device, the device and what to try, instead of TensorFlow's
26-line ResourceExhaustedError. The OOM is injected (a real one would first
allocate the memory); the step's own exception handling is what is tested."""
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.errors import OutOfMemoryError

import helpers.cli


def test_an_out_of_memory_step_is_one_line_naming_the_batch_and_device():
    trainer = Trainer(Params(model="trivial", device="cpu", num_gpus=2, batch_size=4,
                             num_batches=2, num_warmup_batches=0, display_every=100))

    def oom(*args):
        raise tf.errors.ResourceExhaustedError(
            None, None, "OOM when allocating tensor with shape[10000000,32,32,3] and type "
            "float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu")

    trainer._step_fn = oom
    try:
        with pytest.raises(OutOfMemoryError) as raised:
            trainer.train(write=helpers.cli.quiet)
    finally:
        trainer.close()
    assert str(raised.value) == (
        "out of memory in a training step: --batch_size=4 per device on cpu (2 devices, "
        "global batch 8); lower --batch_size (add --gradient_accumulation_steps to keep the "
        "global batch) or train a smaller model")
    assert trainer.global_step() == 0  # nothing applied


def _input_build_out_of_memory(monkeypatch):
    """The synthetic input's build fails as --batch_size=10000000 does on a CPU
    (TensorFlow's ResourceExhaustedError while the batch is made)."""
    from towertrain.input_pipeline import synthetic

    def oom(self, devices):
        raise tf.errors.ResourceExhaustedError(
            None, None, "OOM when allocating tensor with shape[10000000,32,32,3]")
    monkeypatch.setattr(synthetic.SyntheticInput, "create", oom)


BUILD_MESSAGE = (
    "out of memory while building the input: --batch_size=10000000 per device on cpu "
    "(1 device, global batch 10000000); lower --batch_size (add "
    "--gradient_accumulation_steps to keep the global batch)")


def test_out_of_memory_while_the_input_is_built_is_one_line_in_the_library(monkeypatch):
    _input_build_out_of_memory(monkeypatch)
    with pytest.raises(OutOfMemoryError) as raised:
        Trainer(Params(model="trivial", device="cpu", batch_size=10000000))
    assert str(raised.value) == BUILD_MESSAGE


def test_out_of_memory_while_the_input_is_built_is_one_line_and_exit_2(monkeypatch, capsys):
    from helpers import refusals
    _input_build_out_of_memory(monkeypatch)
    status, err = refusals.run_cli(["--model=trivial", "--device=cpu",
                                    "--batch_size=10000000"], capsys)
    assert status == 2
    assert err == f"towertrain: error: {BUILD_MESSAGE}\n"
