"""--variable_consistency=relaxed: each step applies the previous step's
all-reduced gradients (tf_cnn_benchmarks' deferred gradients); strong applies
its own."""
import numpy as np
import pytest

import helpers.tiny_models  # noqa: F401 - registers ckpt_tiny
from helpers.tiny_models import tiny_params
from towertrain import Trainer
from towertrain.errors import ParamsError


def weights(trainer):
    trainable, _ = trainer.variables.primary_variables()
    return [v.numpy().copy() for v in trainable]


def trained(consistency, steps):
    trainer = Trainer(tiny_params(variable_consistency=consistency,  # momentum
                                  num_batches=steps))
    start = weights(trainer)
    history = [trainer.step() and weights(trainer) for _ in range(steps)]
    copies = [[v.numpy() for v in copy] for copy in trainer.variables.trainable_copies()]
    return start, history, copies


def test_relaxed_applies_each_sum_one_step_late():
    start, strong, _ = trained("strong", 2)
    relaxed_start, relaxed, copies = trained("relaxed", 2)
    for a, b in zip(start, relaxed_start):
        np.testing.assert_array_equal(a, b)  # same seed, same start
    # Step 1 applies the (zero) sum held before any step: nothing moves.
    for a, b in zip(relaxed_start, relaxed[0]):
        np.testing.assert_array_equal(a, b)
    # Step 2 applies step 1's sum, computed at the start weights on batch 1:
    # exactly strong's first update.
    for a, b in zip(strong[0], relaxed[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert not all(np.array_equal(a, b) for a, b in zip(strong[1], relaxed[1]))
    for other in copies[1:]:  # the copies stay identical
        for a, b in zip(copies[0], other):
            np.testing.assert_array_equal(a, b)


def test_relaxed_only_with_replicated():
    with pytest.raises(ParamsError, match=r"^--variable_consistency=relaxed: only applies to "
                                          r"--variable_update=replicated"):
        tiny_params("parameter_server", variable_consistency="relaxed")


def test_relaxed_resume_applies_the_held_sums_like_an_uninterrupted_run(tmp_path):
    """The held sums ride the checkpoint: 3 steps, a new process's trainer
    (here a new Trainer) resumes from train_dir for 2 more, and every copy
    equals 5 straight steps. Without them step 4 would apply zeros."""
    def run(train_dir, steps):
        trainer = Trainer(tiny_params(variable_consistency="relaxed", num_batches=steps,
                                      train_dir=str(train_dir)))
        trainer.train(write=lambda line: None)
        return trainer

    straight = run(tmp_path / "straight", 5)
    run(tmp_path / "resumed", 3)
    resumed = run(tmp_path / "resumed", 5)
    assert resumed.global_step() == 5
    for got_copy, want_copy in zip(resumed.variables.trainable_copies(),
                                   straight.variables.trainable_copies()):
        for got, want in zip(got_copy, want_copy):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=1e-6)
