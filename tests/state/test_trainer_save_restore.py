"""Trainer.save / Trainer.restore: the library's checkpoint door."""
import keras
import numpy as np
import pytest

import towertrain
from towertrain.state import checkpoint as ckpt_lib

from helpers import tiny_models  # noqa: F401 - registers ckpt_tiny


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
