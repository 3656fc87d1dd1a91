"""The user's model ends up trained, and steps count the examples they really
trained on."""

import keras
import numpy as np
import pytest

from towertrain import Params, Trainer
from towertrain.callbacks import Callback
from towertrain.input_pipeline import from_arrays

from helpers import tiny_models  # noqa: F401 - registers ckpt_tiny
import helpers.cli


# ---------------------------------------------------------------------------
# 5. train() leaves the trained values in the user's own Keras model.

def test_the_users_model_holds_the_trained_weights():
    rng = np.random.RandomState(0)
    images = rng.randn(16, 4, 4, 3).astype(np.float32)
    labels = rng.randint(0, 5, 16).astype(np.int32)
    keras.utils.set_random_seed(5)
    model = tiny_models.build_tiny(5, "channels_last", 4)  # has batch norm
    before = model.predict(images, verbose=0)
    params = Params(device="cpu", num_gpus=2, variable_update="replicated",
                    optimizer="momentum", num_warmup_batches=0, num_batches=3,
                    init_learning_rate=0.1, display_every=100)
    trainer = Trainer(params, model=model, input_source=from_arrays(images, labels, 8))
    trainer.train(write=helpers.cli.quiet)
    after = model.predict(images, verbose=0)
    assert not np.allclose(after, before)
    trainable, non_trainable = trainer.variables.primary_variables()
    for mine, trained in zip(model.trainable_variables, trainable):
        np.testing.assert_array_equal(mine.numpy(), trained.numpy())
    for mine, trained in zip(model.non_trainable_variables, non_trainable):
        np.testing.assert_array_equal(mine.numpy(), trained.numpy())


# ---------------------------------------------------------------------------
# 11. Steps report (and images/sec counts) the examples they really trained on.

class _Recorder(Callback):
    def __init__(self):
        self.steps = []

    def after_step(self, step, result, seconds):
        self.steps.append((step, result.examples, seconds))


@pytest.mark.parametrize("staging_depth", [0, 1])
def test_partial_last_batch_counts_its_real_examples(staging_depth):
    images = np.random.RandomState(0).rand(21, 2, 2, 1).astype(np.float32)
    labels = np.arange(21, dtype=np.int32) % 3
    params = Params(device="cpu", num_gpus=2, num_epochs=1, num_warmup_batches=0,
                    staging_depth=staging_depth, init_learning_rate=0.01, display_every=1)
    model = keras.Sequential([keras.Input((2, 2, 1)), keras.layers.Flatten(),
                              keras.layers.Dense(3)])
    trainer = Trainer(params, model=model,
                      input_source=from_arrays(images, labels, 8, num_epochs=1))
    recorder, lines = _Recorder(), []
    result = trainer.train(write=lines.append, callbacks=[recorder])
    assert [(step, n) for step, n, _ in recorder.steps] == [(1, 8), (2, 8), (3, 5)]
    seconds = sum(s for _, _, s in recorder.steps)
    assert result.images_per_sec == pytest.approx(21 / seconds)
    assert f"total images/sec: {21 / seconds:.2f}" in lines


def test_a_users_callbacks_run_after_the_built_in_ones():
    """docs/library.md: a user's after_step sees the step's line already written."""
    lines, seen = [], []

    class LastLine(Callback):
        def after_step(self, step, result, seconds):
            seen.append(lines[-1].split("\t")[0] if lines else None)

    trainer = Trainer(tiny_models.tiny_params(num_batches=3).replace(display_every=1))
    trainer.train(write=lines.append, callbacks=[LastLine()])
    assert seen == ["1", "2", "3"]
