"""Resume restores the input position: a shuffled tf.data input continues
where it stopped, so a split run equals an uninterrupted one (in-process)."""
import numpy as np
import tensorflow as tf

from towertrain import Trainer
from towertrain.input_pipeline import from_arrays

from helpers import tiny_models  # noqa: F401 - registers ckpt_tiny


def make_trainer(train_dir, num_batches, **kw):
    tf.random.set_seed(1)  # the shuffle's seed pair includes the global seed
    rng = np.random.default_rng(3)
    images = rng.standard_normal((36, 8, 8, 3)).astype(np.float32)
    labels = rng.integers(0, 10, 36).astype(np.int32)
    # staging_depth=0: staged batches are drawn ahead of training and would be
    # skipped on resume (the iterator has moved past them).
    params = tiny_models.tiny_params("parameter_server", 2, train_dir=train_dir,
                                         num_batches=num_batches, staging_depth=0, **kw)
    return Trainer(params, input_source=from_arrays(images, labels, 6, shuffle=True, seed=5))


def weights(trainer):
    trainable, non_trainable = trainer.variables.primary_variables()
    return [v.numpy() for v in trainable + non_trainable]


def test_split_run_with_shuffled_input_equals_uninterrupted(tmp_path):
    whole = make_trainer(str(tmp_path / "whole"), 11)
    whole.train(write=lambda line: None)
    make_trainer(str(tmp_path / "split"), 4).train(write=lambda line: None)
    lines = []
    resumed = make_trainer(str(tmp_path / "split"), 11)
    resumed.train(write=lines.append)
    assert any(line.startswith("Resumed:") and "from step 4" in line for line in lines)
    for got, expected in zip(weights(resumed), weights(whole)):
        np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)


def test_eval_during_training_prints_accuracy(tmp_path):
    lines = []
    trainer = make_trainer(str(tmp_path), 4, eval_during_training_every_n_steps=2)
    trainer.train(write=lines.append,
                  eval_data=tiny_models.eval_data(trainer.data_format))
    evals = [line for line in lines if line.startswith("Accuracy @ 1 = ")]
    assert len(evals) == 2 and "(step 4)" in evals[-1]
    assert evals[-1].endswith(f"[{tiny_models.NUM_EVAL} examples, test eval set]")
