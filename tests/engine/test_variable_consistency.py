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
