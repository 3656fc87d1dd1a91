"""The library's doors for a user's own data and loss, through the public API:
from_dataset and from_generator (labels checked against the model's classes
in the step), Trainer.evaluate on user data, a multi-output model with a
custom loss equal to serial Keras."""
import keras
import numpy as np
import pytest
import tensorflow as tf

import towertrain

CLASSES, BATCH = 5, 8


def small_net(seed=0, bn=False):
    keras.utils.set_random_seed(seed)
    layers = [keras.Input((6, 6, 3)), keras.layers.Conv2D(4, 3, name="conv")]
    if bn:
        layers.append(keras.layers.BatchNormalization(name="bn"))
    layers += [keras.layers.Flatten(name="flat"), keras.layers.Dense(CLASSES, name="logits")]
    return keras.Sequential(layers, name="user_net")


def data(n=3 * BATCH, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((n, 6, 6, 3)).astype(np.float32)
    labels = rng.integers(0, CLASSES, n).astype(np.int64)
    return images, labels


def generator_input(images, labels):
    def examples():
        yield from zip(images, labels)
    signature = (tf.TensorSpec((6, 6, 3), tf.float32), tf.TensorSpec((), tf.int64))
    return towertrain.from_generator(examples, signature, BATCH)


def dataset_input(images, labels):
    return towertrain.from_dataset(tf.data.Dataset.from_tensor_slices((images, labels)),
                                   global_batch=BATCH)


DOORS = {"from_dataset": dataset_input, "from_generator": generator_input}


def params(**kwargs):
    return towertrain.Params(device="cpu", num_gpus=2, init_learning_rate=0.1, **kwargs)


def _weights_kept(trainer, model, before):
    """Nothing of the refused step was applied; closes the trainer."""
    trainer.sync_model()
    for got, want in zip(model.get_weights(), before):
        np.testing.assert_array_equal(got, want)
    trainer.close()


@pytest.mark.parametrize("door", sorted(DOORS))
@pytest.mark.parametrize("bad", [CLASSES, -1])
def test_labels_outside_the_models_classes_fail_the_step_naming_them(door, bad):
    images, labels = data()
    labels[BATCH + 3] = bad  # in the second global batch
    model = small_net()
    # Staging off: the bad batch is fetched by the step that would train on it.
    trainer = towertrain.Trainer(params(staging_depth=0), model=model,
                                 input_source=DOORS[door](images, labels))
    trainer.step()  # the first batch is fine
    trainer.sync_model()
    before = model.get_weights()
    with pytest.raises(towertrain.ModelError) as failed:
        trainer.step()
    fix = (f"give the last Dense layer {CLASSES + 1} units or fix the labels" if bad > 0
           else "labels are class indices: fix the labels")
    assert str(failed.value) == (f"towertrain.{door} input: label {bad} is outside the "
                                 f"model's {CLASSES} classes (0 .. {CLASSES - 1}); {fix}")
    assert trainer.global_step() == 1
    _weights_kept(trainer, model, before)


def test_a_bad_label_in_the_first_batch_with_staging_on():
    images, labels = data()
    labels[2] = CLASSES
    model = small_net()
    before = model.get_weights()
    trainer = towertrain.Trainer(params(), model=model,
                                 input_source=dataset_input(images, labels))
    with pytest.raises(towertrain.ModelError, match=r"^towertrain.from_dataset input: label "
                                                    r"5 is outside the model's 5 classes"):
        trainer.step()
    assert trainer.global_step() == 0
    _weights_kept(trainer, model, before)


def trained_weights(make_input, steps=4):
    images, labels = data()
    model = small_net()
    trainer = towertrain.Trainer(params(), model=model, input_source=make_input(images, labels))
    for _ in range(steps):  # 4 steps of 8 over 24 examples: across an epoch end
        trainer.step()
    trainer.sync_model()
    trainer.close()
    return model.get_weights()


def test_from_generator_trains_as_from_arrays():
    got = trained_weights(generator_input)
    want = trained_weights(lambda images, labels: towertrain.from_arrays(images, labels, BATCH))
    assert any(not np.allclose(w, w0) for w, w0 in zip(want, small_net().get_weights()))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-6)


def test_evaluate_a_user_model_on_user_data():
    images, labels = data()
    test_images, test_labels = data(n=21, seed=1)  # 21: an uneven last batch
    model = small_net(bn=True)
    trainer = towertrain.Trainer(params(), model=model,
                                 input_source=towertrain.from_arrays(images, labels, BATCH))
    for _ in range(3):
        trainer.step()
    split = towertrain.EvalData(
        tf.data.Dataset.from_tensor_slices((test_images, test_labels)).batch(BATCH),
        len(test_images), "my test split")
    result = trainer.evaluate(split)
    trainer.sync_model()
    trainer.close()
    predicted = model.predict(test_images, verbose=0).argmax(-1)
    assert result.num_examples == 21
    assert result.top1 == np.mean(predicted == test_labels)
    assert 0 < result.top1 < 1  # a score that can tell a wrong count apart


def two_heads(seed=0):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((6, 6, 3))
    x = keras.layers.Conv2D(4, 3, activation="relu", name="conv")(inputs)
    aux = keras.layers.Dense(CLASSES, name="aux_logits")(
        keras.layers.GlobalAveragePooling2D(name="aux_pool")(x))
    logits = keras.layers.Dense(CLASSES, name="logits")(keras.layers.Flatten(name="flat")(x))
    return keras.Model(inputs, [logits, aux], name="two_heads")


def main_and_aux_loss(labels, outputs):  # docs/library.md's custom loss
    logits, aux_logits = outputs
    return (keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
            + 0.4 * keras.losses.sparse_categorical_crossentropy(labels, aux_logits,
                                                                  from_logits=True))


def test_multi_output_custom_loss_on_two_devices_equals_serial_keras():
    images, labels = data()
    lr, steps, batch = 0.1, 3, 7  # 7: an uneven split over the 2 devices
    model, reference = two_heads(), two_heads()
    trainer = towertrain.Trainer(towertrain.Params(device="cpu", num_gpus=2,
                                                   init_learning_rate=lr),
                                 model=model, loss_fn=main_and_aux_loss,
                                 input_source=towertrain.from_arrays(images, labels, batch))
    for _ in range(steps):
        trainer.step()
    trainer.sync_model()
    trainer.close()

    optimizer = keras.optimizers.SGD(lr)
    for k in range(steps):
        x, y = images[k * batch:(k + 1) * batch], labels[k * batch:(k + 1) * batch]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(main_and_aux_loss(y, reference(x, training=True)))
        optimizer.apply(tape.gradient(loss, reference.trainable_variables),
                        reference.trainable_variables)
    moved = False
    for got, want, start in zip(model.get_weights(), reference.get_weights(),
                                two_heads().get_weights()):
        moved |= not np.allclose(want, start)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * max(np.abs(want).max(), 1))
    assert moved


class OwnInput(towertrain.Input):
    """A user's Input subclass: it makes and splits its batches itself."""

    name = "own"

    def __init__(self, images, labels):
        self.global_batch, self._data = BATCH, (images, labels)

    def create(self, devices):
        with tf.device("/cpu:0"):
            self._iterator = iter(tf.data.Dataset.from_tensor_slices(self._data)
                                  .batch(BATCH).repeat())

    def tower_batches(self, devices):
        from towertrain.input_pipeline import split_to_devices
        with tf.device("/cpu:0"):
            batch = next(self._iterator)
        return split_to_devices(batch, devices)


def test_a_user_input_subclass_s_labels_are_checked_in_the_step_too():
    images, labels = data()
    labels[BATCH + 3] = CLASSES  # in the second global batch
    model = small_net()
    trainer = towertrain.Trainer(params(), model=model, input_source=OwnInput(images, labels))
    trainer.step()
    trainer.sync_model()
    before = model.get_weights()
    with pytest.raises(towertrain.ModelError, match=(
            rf"^OwnInput input: label {CLASSES} is outside the model's {CLASSES} classes")):
        trainer.step()
    assert trainer.global_step() == 1
    _weights_kept(trainer, model, before)
