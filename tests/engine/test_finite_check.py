"""Where the exchange sums the gradients (replicated, collective_all_reduce),
each device checks its own copy of each summed pack (the step's loss riding
the last one) for NaN or infinity instead of every tower's gradients: one
check per pack per device, none per variable, and no verdict gathered to one
device. A NaN on any tower still stops the update on every copy."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Trainer
from towertrain.input_pipeline import from_arrays

from helpers import tiny_models

PER_DEVICE, TOWERS = 3, 2
POISON_LABEL = 9


def _nan_gradient_for(label):
    """Cross-entropy, plus for the examples of `label` a term that is exactly 0
    but whose gradient is NaN: a finite loss, NaN gradients on the towers
    that hold such an example, finite ones on the others."""
    def loss_fn(labels, logits):
        ce = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        poison = tf.reduce_sum(tf.sqrt(tf.abs(logits - tf.stop_gradient(logits))), -1)
        return ce + tf.where(tf.equal(tf.cast(labels, tf.int32), label), poison,
                             tf.zeros_like(ce))
    return loss_fn


def _data(poisoned_tower):
    """Two global batches; in the first, one example of `poisoned_tower`'s
    slice has the poison label (tower slices are contiguous)."""
    rng = np.random.default_rng(3)
    n = 2 * PER_DEVICE * TOWERS
    images = rng.standard_normal((n, 8, 8, 3)).astype(np.float32)
    labels = rng.integers(0, POISON_LABEL, n).astype(np.int32)
    labels[poisoned_tower * PER_DEVICE + 1] = POISON_LABEL
    return images, labels


def _copies(trainer):
    return [v.numpy().tobytes() for copy in trainer.variables.trainable_copies() for v in copy]


@pytest.mark.parametrize("mode", ["replicated", "parameter_server"])
@pytest.mark.parametrize("poisoned_tower", [0, 1])
def test_nan_gradients_on_one_tower_apply_nothing_on_any_copy(mode, poisoned_tower):
    images, labels = _data(poisoned_tower)
    trainer = Trainer(tiny_models.tiny_params(mode, TOWERS, batch_size=PER_DEVICE, num_batches=2),
                      input_source=from_arrays(images, labels, PER_DEVICE * TOWERS,
                                               num_epochs=1),
                      loss_fn=_nan_gradient_for(POISON_LABEL))
    before = _copies(trainer)
    result = trainer.step()
    assert np.isfinite(result.loss)  # only the gradients are NaN
    assert result.finite is False
    assert _copies(trainer) == before  # bit-identical: nothing applied anywhere
    assert trainer.global_step() == 0
    result = trainer.step()  # the next batch has no poison: it trains
    assert result.finite is True and trainer.global_step() == 1
    assert _copies(trainer) != before


def _finite_checks(trainer):
    """The IsFinite ops of the traced step (the update's branch excluded)."""
    return [op for op in trainer.trace_step().graph.get_operations()
            if op.type == "IsFinite"]


@pytest.mark.parametrize("mode,sums", [("replicated", True), ("parameter_server", False)])
def test_the_summed_gradient_is_checked_once_not_per_tower(mode, sums):
    towers = 4
    trainer = Trainer(tiny_models.tiny_params(mode, towers, batch_size=2))
    floating = [v for v in trainer.model.trainable_variables if tf.as_dtype(v.dtype).is_floating]
    checks = _finite_checks(trainer)
    losses = [op for op in checks if op.inputs[0].shape.rank == 0]
    gradients = [op for op in checks if op.inputs[0].shape.rank != 0]
    assert len(losses) == towers  # every tower's loss
    if sums:  # each device's copy of the one pack, on that device
        assert len(gradients) == towers
        assert len({op.device for op in gradients}) == towers
    else:  # each tower's own, on its device
        assert len(gradients) == towers * len(floating)
        assert len({op.device for op in gradients}) == towers


def _infinite_loss_for(label):
    """Cross-entropy, plus an infinity that carries no gradient for the
    examples of `label`: an infinite loss with finite gradients, which the
    summed gradients' check cannot see."""
    def loss_fn(labels, logits):
        ce = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        return ce + tf.where(tf.equal(tf.cast(labels, tf.int32), label),
                             tf.fill(tf.shape(ce), float("inf")), tf.zeros_like(ce))
    return loss_fn


def test_an_infinite_loss_in_an_earlier_micro_batch_skips_the_update():
    """--gradient_accumulation_steps=2: the update's first micro-batch has an
    infinite loss (finite gradients), its last is clean: nothing is applied,
    though the exchanged sum is finite (the accumulated flag carries it)."""
    images, labels = _data(poisoned_tower=1)  # batch 0 poisoned, batch 1 clean
    trainer = Trainer(tiny_models.tiny_params("replicated", TOWERS, batch_size=PER_DEVICE,
                                              num_batches=1, gradient_accumulation_steps=2),
                      input_source=from_arrays(images, labels, PER_DEVICE * TOWERS,
                                               num_epochs=1),
                      loss_fn=_infinite_loss_for(POISON_LABEL))
    before = _copies(trainer)
    result = trainer.step()
    assert result.finite is False and not np.isfinite(result.loss)
    assert _copies(trainer) == before and trainer.global_step() == 0
