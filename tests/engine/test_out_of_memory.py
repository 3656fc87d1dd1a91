"""Out of memory in a step is one line in the run's terms (issue 33, item 3):
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
        "out of memory in a training step: --batch_size=4 per device on cpu (2 device(s), "
        "global batch 8); lower --batch_size (add --gradient_accumulation_steps to keep the "
        "global batch) or train a smaller model")
    assert trainer.global_step() == 0  # nothing applied
