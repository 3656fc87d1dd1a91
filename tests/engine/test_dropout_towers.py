"""Towers draw their own dropout masks, and seed generators keep stable
checkpoint keys."""

import keras
import numpy as np
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.state import checkpoint as ckpt_lib
from towertrain.input_pipeline import from_arrays

from helpers import tiny_models  # noqa: F401 - registers ckpt_tiny
import helpers.cli
from helpers.run_handles import checkpointer_for


# ---------------------------------------------------------------------------
# 3. Dropout: each tower draws its own mask, the fold-in of (seed, step, tower).

DROP_UNITS = 16


def _dropout_model(name="dropnet", units=DROP_UNITS):
    inputs = keras.Input((units,))
    dropped = keras.layers.Dropout(0.5, name="drop")(inputs)
    outputs = keras.layers.Dense(units, name="out", use_bias=False,
                                 kernel_initializer="identity")(dropped)
    return keras.Model(inputs, outputs, name=name)


def _logits_recorder(store):
    """Cross-entropy that also records each tower's logits, keyed by its labels
    (every tower gets its own label value)."""
    def record(labels, logits):
        store.setdefault(int(labels.numpy()[0]), []).append(logits.numpy())
        return np.float32(0)

    def loss_fn(labels, logits):
        zero = tf.py_function(record, [labels, tf.stop_gradient(logits)], tf.float32)
        return keras.losses.sparse_categorical_crossentropy(
            labels, logits, from_logits=True) + zero
    return loss_fn


def _dropout_trainer(num_towers, per_tower, store, model=None):
    images = np.ones((num_towers * per_tower, DROP_UNITS), np.float32)
    labels = np.repeat(np.arange(num_towers), per_tower).astype(np.int32)
    params = Params(device="cpu", num_gpus=num_towers, variable_update="replicated",
                    num_warmup_batches=0, num_batches=2, init_learning_rate=1e-6,
                    display_every=100)
    return Trainer(params, model=model or _dropout_model(),
                   input_source=from_arrays(images, labels, len(images)),
                   loss_fn=_logits_recorder(store))


def test_towers_draw_independent_dropout_masks():
    store = {}
    trainer = _dropout_trainer(2, 4, store)
    trainer.step()
    trainer.step()
    assert sorted(store) == [0, 1] and all(len(v) == 2 for v in store.values())
    # The identity kernel (barely trained) passes the mask through: kept inputs
    # read 2 (1 / keep probability), dropped ones ~0.
    masks = {tower: [logits > 1 for logits in values] for tower, values in store.items()}
    for tower, values in store.items():
        for logits, mask in zip(values, masks[tower]):
            np.testing.assert_allclose(logits, 2.0 * mask, atol=1e-3)
            assert 0 < np.count_nonzero(mask) < mask.size
    # 4 x 16 values at rate 0.5: equal masks by chance have probability 2**-64.
    for step in range(2):
        assert not np.array_equal(masks[0][step], masks[1][step]), f"step {step}"
    # Each tower's generator advances: a new mask every step.
    assert not np.array_equal(masks[0][0], masks[0][1])
    assert not np.array_equal(masks[1][0], masks[1][1])


def _folded_state(seed, step, slot, generator=0):
    """The independent reference of a tower's seed state: TensorFlow's
    stateless fold-in of (seed, step, slot, generator), as the docs say."""
    def fold(key, data):
        return tf.random.experimental.stateless_fold_in(key, tf.constant(data, tf.int64))
    key = fold(fold(fold(tf.constant([seed, 0], tf.int64), step), slot), generator)
    return key.numpy()


def test_each_tower_draws_what_the_fold_in_of_seed_step_and_tower_gives():
    """Replaces "one tower draws what Keras' own generator draws": every draw is
    set from (seed, global step, slot) before the step, so a stop and resume
    (or another topology) draws the same values."""
    store = {}
    model = _dropout_model()
    trainable = [v.numpy() for v in model.trainable_variables]
    non_trainable = [v.numpy() for v in model.non_trainable_variables]
    trainer = _dropout_trainer(2, 4, store, model=model)
    trainer.step()
    trainer.step()
    x = np.ones((4, DROP_UNITS), np.float32)
    for step in range(2):
        for tower in range(2):
            state = _folded_state(trainer.params.tf_random_seed, step, tower)
            expected, _ = model.stateless_call(trainable, [state], x, training=True)
            # The identity kernel barely moves (learning rate 1e-6): the mask shows.
            np.testing.assert_allclose(store[tower][step], expected.numpy(), atol=1e-3,
                                       err_msg=f"step {step} tower {tower}")
    assert len(non_trainable) == 1  # the generator's state alone


# ---------------------------------------------------------------------------
# 4. A seed generator's checkpoint key names its layer, not Keras' counter.

def _unrelated_dropouts(count):
    for _ in range(count):
        keras.Sequential([keras.Input((3,)), keras.layers.Dropout(0.3)])


def test_seed_generator_keys_do_not_depend_on_layers_built_before():
    _unrelated_dropouts(3)
    first = ckpt_lib.model_variable_dict(_dropout_model())
    _unrelated_dropouts(5)
    second = ckpt_lib.model_variable_dict(_dropout_model())
    assert "drop__seed_generator_state" in first
    assert sorted(first) == sorted(second) == ["drop__seed_generator_state", "out__kernel"]


def test_checkpoint_restores_into_a_model_built_after_other_layers(tmp_path):
    images = np.ones((8, DROP_UNITS), np.float32)
    labels = np.arange(8, dtype=np.int32) % DROP_UNITS

    def trainer():
        params = Params(device="cpu", num_gpus=2, variable_update="replicated",
                        num_warmup_batches=0, num_batches=3, init_learning_rate=0.1,
                        display_every=100, train_dir=str(tmp_path))
        return Trainer(params, model=_dropout_model(),
                       input_source=from_arrays(images, labels, 8))

    _unrelated_dropouts(2)
    source = trainer()
    source.train(write=helpers.cli.quiet)
    saved = ckpt_lib.model_variable_dict(source.model, *source.variables.primary_variables())
    _unrelated_dropouts(4)
    target = trainer()
    assert checkpointer_for(target, str(tmp_path)).restore_latest().endswith("ckpt-3")
    restored = ckpt_lib.model_variable_dict(target.model, *target.variables.primary_variables())
    assert sorted(restored) == sorted(saved)
    for key, variable in saved.items():
        np.testing.assert_array_equal(restored[key].numpy(), variable.numpy(), err_msg=key)
    # The generator's state moved during training, and was restored, not fresh.
    fresh = _dropout_model().non_trainable_variables[0].numpy()
    assert not np.array_equal(restored["drop__seed_generator_state"].numpy(), fresh)
