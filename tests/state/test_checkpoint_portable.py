"""Checkpoints restore anywhere: mode x devices x data format, plus bad input."""
import os

import numpy as np
import pytest

from towertrain import Params, Trainer
from towertrain.state import checkpoint as ckpt_lib
from towertrain.state import run_record
from towertrain.errors import ParamsError

from helpers.run_handles import checkpointer_for
from helpers.tiny_models import NUM_EVAL, eval_data, evaluate, tiny_params  # noqa: F401 - registers ckpt_tiny


# Each pair changes the mode, the device count and the data format; every one
# of the 12 cells appears once (the full 12x11 cross product is too slow here).
PAIRS = [
    (("parameter_server", 1, "NCHW"), ("replicated", 4, "NHWC")),
    (("parameter_server", 2, "NCHW"), ("replicated", 1, "NHWC")),
    (("parameter_server", 4, "NCHW"), ("replicated", 2, "NHWC")),
    (("replicated", 1, "NCHW"), ("parameter_server", 4, "NHWC")),
    (("replicated", 2, "NCHW"), ("parameter_server", 1, "NHWC")),
    (("replicated", 4, "NCHW"), ("parameter_server", 2, "NHWC")),
]


@pytest.mark.parametrize("source,target", PAIRS, ids=lambda c: "-".join(map(str, c)))
def test_restore_into_another_cell_gives_same_eval(tmp_path, source, target):
    trained = Trainer(tiny_params(*source, train_dir=str(tmp_path)))
    trained.train(write=lambda line: None)
    expected = evaluate(trained)

    restored = Trainer(tiny_params(*target, train_dir=str(tmp_path)))
    path = checkpointer_for(restored, str(tmp_path)).restore_latest()
    assert path.endswith("ckpt-3")
    got = evaluate(restored)
    assert got.num_examples == NUM_EVAL
    assert (got.top1, got.top5) == (expected.top1, expected.top5)
    np.testing.assert_allclose(got.logits, expected.logits, atol=1e-5)

    # Step, slots and every replica match the source's canonical copy.
    src = ckpt_lib.EngineState(trained.model, trained.variables)
    dst = ckpt_lib.EngineState(restored.model, restored.variables)
    assert dst.global_step() == 3
    assert all(int(o.iterations.numpy()) == 3 for o in restored.variables.optimizers())
    for key, slots in src.slots.items():
        np.testing.assert_array_equal(dst.slots[key]["momentum"].numpy(),
                                      slots["momentum"].numpy())
    for copy in restored.variables.trainable_copies():
        for mine, ref in zip(copy, trained.variables.primary_variables()[0]):
            np.testing.assert_array_equal(mine.numpy(), ref.numpy())
    if target[0] == "replicated":
        for optimizer in restored.variables.optimizers()[1:]:
            for slots in ckpt_lib.optimizer_slots(optimizer).values():
                assert np.any(slots["momentum"].numpy() != 0)


def test_eval_counts_every_example_once_on_any_device_count():
    trainer = Trainer(tiny_params("replicated", 4))
    one = Trainer(tiny_params("parameter_server", 1))
    for variable, source in zip(one.variables.primary_variables()[0],
                                trainer.variables.primary_variables()[0]):
        variable.assign(source)
    four_devices, one_device = evaluate(trainer), evaluate(one)
    assert four_devices.num_examples == one_device.num_examples == NUM_EVAL
    assert four_devices.logits.shape == (NUM_EVAL, 10)
    np.testing.assert_allclose(four_devices.logits, one_device.logits, atol=1e-5)
    # The same accuracy recomputed by hand from the logits.
    labels = np.concatenate([y.numpy() for _, y in eval_data("NHWC").dataset])
    assert four_devices.top1 == np.mean(np.argmax(one_device.logits, 1) == labels)


def test_checkpoint_of_another_model_lists_variables(tmp_path):
    Trainer(tiny_params(train_dir=str(tmp_path), num_batches=1,
                        )).train(write=lambda line: None)
    other = Trainer(Params(model="trivial", device="cpu", batch_size=2, num_batches=1,
                           num_warmup_batches=0, train_dir=str(tmp_path)))
    # The run record names both models in one line...
    with pytest.raises(ckpt_lib.CheckpointError,
                       match="--model=trivial but .* was trained with --model=ckpt_tiny"):
        other.train(write=lambda line: None)
    # ...and without it the variables themselves tell.
    os.remove(tmp_path / run_record.RUN_INFO_FILE)
    with pytest.raises(ckpt_lib.CheckpointError) as err:
        other.train(write=lambda line: None)
    message = str(err.value)
    assert "missing variables: hidden__bias, hidden__kernel" in message
    assert "unexpected variables: bn__beta" in message and "conv__kernel" in message


def test_truncated_checkpoint_is_a_clear_error_and_nothing_is_overwritten(tmp_path):
    Trainer(tiny_params(train_dir=str(tmp_path), num_batches=1)).train(write=lambda l: None)
    data = [f for f in os.listdir(tmp_path) if ".data-" in f][0]
    with open(tmp_path / data, "r+b") as f:
        f.truncate(os.path.getsize(tmp_path / data) // 2)
    before = {f: os.path.getsize(tmp_path / f) for f in os.listdir(tmp_path)}
    with pytest.raises(ckpt_lib.CheckpointError, match=r"ckpt-1 is damaged \(.+\); nothing was changed"):
        Trainer(tiny_params(train_dir=str(tmp_path), num_batches=4)).train(
            write=lambda line: None)
    assert {f: os.path.getsize(tmp_path / f) for f in os.listdir(tmp_path)} == before


def test_unwritable_train_dir_fails_before_training(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    trainer = Trainer(tiny_params(train_dir=str(blocker / "sub"), num_batches=1))
    # Checked with every path the run writes, before the first step (state/writable.py).
    with pytest.raises(ParamsError, match=r"a_file is a file, not a directory"):
        trainer.train(write=lambda line: None)
    assert int(trainer.variables.iterations().numpy()) == 0


def test_eval_flag_validation():
    with pytest.raises(Exception, match="--eval"):
        tiny_params(eval=True)
    with pytest.raises(Exception, match="--save_model_steps"):
        tiny_params(save_model_steps=2)
