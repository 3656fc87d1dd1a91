"""Trainer.save / Trainer.restore: the library's checkpoint entry point."""
import keras
import tensorflow as tf
import numpy as np
import pytest

import towertrain
from towertrain.state import checkpoint as ckpt_lib

from helpers import tiny_models  # noqa: F401 - registers ckpt_tiny
from helpers.run_handles import checkpointer_for


def _copies(trainer):
    v = trainer.variables
    return [[x.numpy() for x in c] for c in v.trainable_copies()]


def test_save_then_restore_into_another_mode_and_device_count(tmp_path):
    trained = towertrain.Trainer(tiny_models.tiny_params("replicated", 2))
    for _ in range(3):
        trained.step()
    path = trained.save(str(tmp_path / "mine"))
    assert path.endswith("mine")

    other = towertrain.Trainer(tiny_models.tiny_params("parameter_server", 1))
    other.restore(path)
    assert other.global_step() == trained.global_step() == 3
    for got, want in zip(_copies(other)[0], _copies(trained)[0]):
        np.testing.assert_array_equal(got, want)
    # The Keras model holds the restored weights too.
    for got, want in zip(other.model.trainable_variables,
                         trained.variables.primary_variables()[0]):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    # Training continues from there: the same configuration restored takes the
    # same next step (momentum slots and the step came along).
    same = towertrain.Trainer(tiny_models.tiny_params("replicated", 2))
    same.restore(path)
    a, b = trained.step(), same.step()
    assert a.loss == pytest.approx(b.loss, rel=1e-6)
    for got, want in zip(_copies(same)[1], _copies(trained)[1]):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_restore_of_another_models_checkpoint_names_the_variables(tmp_path):
    path = towertrain.Trainer(tiny_models.tiny_params()).save(str(tmp_path / "c"))
    keras.utils.set_random_seed(0)
    trivial = towertrain.Trainer(towertrain.Params(model="trivial", device="cpu",
                                                   batch_size=2))
    with pytest.raises(ckpt_lib.CheckpointError, match="missing variables"):
        trivial.restore(path)


def test_save_carries_the_dynamic_loss_scale_and_its_count(tmp_path):
    fp16 = dict(use_fp16=True, fp16_enable_auto_loss_scale=True, fp16_loss_scale=64.0,
                fp16_inc_loss_scale_every_n=2, allow_emulated_precision=True, num_batches=5)
    trained = towertrain.Trainer(tiny_models.tiny_params(**fp16))
    for _ in range(3):  # finite steps: doubled after 2, then 1 counted
        assert trained.step().finite
    scale = trained.loss_scale
    assert (float(scale.scale.numpy()), int(scale.good_steps.numpy())) == (128.0, 1)
    path = trained.save(str(tmp_path / "fp16"))
    fresh = towertrain.Trainer(tiny_models.tiny_params(**fp16))
    assert float(fresh.loss_scale.scale.numpy()) == 64.0
    fresh.restore(path)
    assert (float(fresh.loss_scale.scale.numpy()),
            int(fresh.loss_scale.good_steps.numpy())) == (128.0, 1)
    # The next finite step doubles it again in both: the count came along.
    trained.step(), fresh.step()
    assert float(fresh.loss_scale.scale.numpy()) == float(trained.loss_scale.scale.numpy()) \
        == 256.0


def test_a_state_with_a_non_finite_variable_is_never_saved(tmp_path):
    from towertrain.errors import TrainingDivergedError
    trainer = towertrain.Trainer(tiny_models.tiny_params(num_batches=2))
    checkpointer = checkpointer_for(trainer, str(tmp_path))
    trainer.step()
    first = checkpointer.save()
    trainer.step()
    weights = trainer.variables.trainable_copies()[0][0]
    weights.assign(tf.fill(weights.shape, float("inf")))
    with pytest.raises(TrainingDivergedError, match=r"^not saving step 2: 1 variable\(s\) "
                                                    r"are not finite"):
        checkpointer.save()
    assert checkpointer.manager.latest_checkpoint == first
    assert sorted(p.name for p in tmp_path.glob("ckpt-*.index")) == ["ckpt-1.index"]
