"""A model or input that does not fit fails before any step, naming the problem."""
import keras
import numpy as np
import pytest
import tensorflow as tf

import towertrain
from towertrain.errors import ModelError


def conv_net(input_shape=(8, 8, 3), classes=5, head=None, data_format="channels_last"):
    layers = [keras.Input(input_shape),
              keras.layers.Conv2D(4, 3, data_format=data_format, name="conv")]
    layers += head if head is not None else [keras.layers.Flatten(name="flat"),
                                             keras.layers.Dense(classes, name="logits")]
    return keras.Sequential(layers, name="user_net")


def arrays(shape=(8, 8, 3), n=8, classes=5, labels=None):
    images = np.zeros((n,) + shape, np.float32)
    if labels is None:
        labels = np.arange(n) % classes
    return images, labels


def make(model, images, labels, **kwargs):
    params = towertrain.Params(device="cpu", num_gpus=2, **kwargs)
    return towertrain.Trainer(params, model=model,
                              input_source=towertrain.from_arrays(images, labels, 4))


def test_image_shape_not_the_models_input():
    with pytest.raises(ModelError, match=r"images of shape \(6, 6, 3\) do not fit model "
                                         r"'user_net', which takes \(8, 8, 3\)"):
        make(conv_net(), *arrays((6, 6, 3)))


def test_images_in_the_wrong_layout_for_data_format():
    model = conv_net((3, 8, 8), data_format="channels_first")  # built for NCHW
    with pytest.raises(ModelError, match=r"NHWC \(channels last\) but the model takes NCHW "
                                         r"\(--data_format=NCHW\).*np.transpose"):
        make(model, *arrays((8, 8, 3)), data_format="NCHW")
    with pytest.raises(ModelError, match=r"NCHW \(channels first\) but the model takes NHWC"):
        make(conv_net(), *arrays((3, 8, 8)), data_format="NHWC")


def test_labels_outside_the_models_classes():
    images, _ = arrays()
    with pytest.raises(ModelError, match=r"label 7 is outside the model's 5 classes "
                                         r"\(0 .. 4\)"):
        make(conv_net(), images, np.array([0, 1, 2, 7, 0, 1, 2, 3]))
    with pytest.raises(ModelError, match=r"label -1 is outside"):
        make(conv_net(), images, np.array([0, 1, 2, -1, 0, 1, 2, 3]))


def test_one_hot_labels_with_the_default_loss():
    images, labels = arrays()
    with pytest.raises(ModelError, match=r"look one-hot.*argmax"):
        make(conv_net(), images, np.eye(5, dtype=np.float32)[labels])


def test_outputs_not_logits_of_rank_2():
    model = conv_net(head=[keras.layers.Dense(5, name="per_pixel")])
    with pytest.raises(ModelError, match=r"outputs of shape \(None, 6, 6, 5\) \(rank 4\).*"
                                         r"logits of rank 2"):
        make(model, *arrays())
    softmax = conv_net(head=[keras.layers.Flatten(),
                             keras.layers.Dense(5, activation="softmax", name="probs")])
    with pytest.raises(ModelError, match=r"ends in a softmax \(layer 'probs'\)"):
        make(softmax, *arrays())


@pytest.mark.parametrize("head", [
    lambda: [keras.layers.Dense(5, activation="softmax", name="probs")],
    lambda: [keras.layers.Dense(5, name="logits"), keras.layers.Activation("softmax",
                                                                           name="probs")],
    lambda: [keras.layers.Dense(5, name="logits"), keras.layers.Softmax(name="probs")],
])
def test_a_final_softmax_is_refused_in_each_of_its_three_forms(head):
    model = conv_net(head=[keras.layers.Flatten()] + head())
    with pytest.raises(ModelError, match=r"ends in a softmax \(layer 'probs'\)"):
        make(model, *arrays())


def test_a_custom_loss_may_take_other_outputs():
    model = conv_net(head=[keras.layers.Dense(5, name="per_pixel")])

    def loss_fn(labels, outputs):  # per example
        return tf.reduce_mean(tf.square(outputs), axis=[1, 2, 3])
    params = towertrain.Params(device="cpu", num_gpus=2)
    trainer = towertrain.Trainer(params, model=model, loss_fn=loss_fn,
                                 input_source=towertrain.from_arrays(*arrays(), 4))
    assert np.isfinite(float(trainer.step()))
    trainer.close()


class MakesVariablesOnCall(keras.layers.Layer):
    """The TF2 lazy pattern: Keras neither tracks nor trains this variable."""

    def call(self, x):
        if not hasattr(self, "scale"):
            self.scale = tf.Variable(1.0, name="lazy_scale")
        return x * self.scale


def test_a_layer_that_creates_variables_on_call():
    model = conv_net(head=[keras.layers.Flatten(), MakesVariablesOnCall(name="bad"),
                           keras.layers.Dense(5, name="logits")])
    with pytest.raises(ModelError, match=r"a layer creates variables when it is "
                                         r"called \(lazy_scale\).*build\(\)"):
        make(model, *arrays())


def test_a_model_that_is_not_built():
    # Through the Trainer, with the user's data (the fix names its shape) and
    # without (the Trainer would otherwise read the unbuilt model's input shape).
    def unbuilt():
        return keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(5)],
                                name="no_input")
    with pytest.raises(ModelError) as failed:
        make(unbuilt(), *arrays())
    assert str(failed.value) == (
        "model 'no_input' is not built (it has no variables yet); start it with "
        "keras.Input(shape), or call model.build((None, 8, 8, 3)) (or the model on one "
        "batch) before passing it to the Trainer")
    params = towertrain.Params(device="cpu", num_gpus=2)
    with pytest.raises(ModelError, match=r"model 'no_input' is not built.*keras.Input\(shape\)"
                                         r", or call model.build\(\(None, height, width, "
                                         r"channels\)\)"):
        towertrain.Trainer(params, model=unbuilt())


def scalar_loss(labels, logits):  # Keras' default reduction: the mean over the slice
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits)


def mean_kept_as_a_vector(labels, logits):  # shape (1,): static rank 1, wrong length
    return tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
        labels, logits, from_logits=True), keepdims=True)


def test_a_custom_loss_that_does_not_return_one_loss_per_example():
    images, labels = arrays()
    params = towertrain.Params(device="cpu", num_gpus=2)
    fix = ("towertrain needs one loss per example, shape (2,), which it sums and divides "
           "by the global batch: return per-example losses, e.g. "
           "keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None) or "
           "keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)")
    # Static slices (from_arrays, batches of 4 over 2 devices): found while tracing.
    for loss_fn, name, got in [(scalar_loss, "scalar_loss", "a single value, shape ()"),
                               (keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                                "SparseCategoricalCrossentropy", "a single value, shape ()"),
                               (mean_kept_as_a_vector, "mean_kept_as_a_vector",
                                "shape (1,)")]:
        model = conv_net()
        with pytest.raises(ModelError) as failed:
            trainer = towertrain.Trainer(params, model=model, loss_fn=loss_fn,
                                         input_source=towertrain.from_arrays(images, labels, 4))
            trainer.step()
        assert str(failed.value) == (f"loss_fn '{name}' returned {got} for a slice of 2 "
                                     f"examples; {fix}")
    # Per-example losses (reduction=None) train.
    trainer = towertrain.Trainer(
        params, model=conv_net(), input_source=towertrain.from_arrays(images, labels, 4),
        loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None))
    assert np.isfinite(float(trainer.step()))
    trainer.close()


def test_a_custom_loss_of_the_wrong_length_on_dynamic_slices():
    # from_dataset's batches have no static size: the step checks the length.
    images, labels = arrays()
    model = conv_net()
    before = model.get_weights()
    source = towertrain.from_dataset(tf.data.Dataset.from_tensor_slices((images, labels)),
                                     global_batch=4)
    trainer = towertrain.Trainer(towertrain.Params(device="cpu", num_gpus=2), model=model,
                                 loss_fn=mean_kept_as_a_vector, input_source=source)
    with pytest.raises(ModelError) as failed:
        trainer.step()
    assert str(failed.value).startswith("loss_fn 'mean_kept_as_a_vector' returned shape (1,) "
                                        "for a slice of 2 examples; towertrain needs one loss "
                                        "per example, shape (2,)")
    assert trainer.global_step() == 0
    trainer.sync_model()
    for got, want in zip(model.get_weights(), before):
        np.testing.assert_array_equal(got, want)
    trainer.close()


@pytest.mark.parametrize("name", ["cifar_cnn", "trivial"])
def test_a_registry_model_named_together_with_a_keras_model_is_refused(name):
    # Params(model='cifar_cnn') with model= trained the Keras
    # model and ignored the flag without a word. Naming the default model
    # ('trivial') is refused too: Params' default is None, not that name.
    assert towertrain.Params().model is None
    with pytest.raises(towertrain.ParamsError) as refused:
        towertrain.Trainer(towertrain.Params(device="cpu", model=name), model=conv_net())
    assert str(refused.value) == (
        f"--model={name}: Trainer(params, model=...) trains your Keras model 'user_net', "
        f"so Params(model={name!r}) would be ignored; drop one of the two")
    # Without the name the same run is built, on the Keras model.
    trainer = make(conv_net(), *arrays())
    assert trainer.model.name == "user_net" and trainer.plan.model == "trivial"
    trainer.close()


def test_a_frozen_model_a_model_without_weights_and_a_two_input_model_are_named():
    """model.trainable = False raised IndexError from the variable manager; a
    keras.Input model without weights was 'not built'; a two-input model's
    error ended 'in user code:'."""
    frozen = conv_net()
    frozen.trainable = False
    with pytest.raises(ModelError) as failed:
        make(frozen, *arrays())
    assert str(failed.value) == (
        "model 'user_net' has no trainable variables (model.trainable = False, or every layer "
        "frozen), so nothing would train; set model.trainable = True, or freeze only some "
        "layers")
    flat = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten()], name="flat")
    with pytest.raises(ModelError) as failed:
        make(flat, *arrays())
    assert str(failed.value) == (
        "model 'flat' has no variables: it is built (from keras.Input), but none of its "
        "layers holds a weight, so there is nothing to train; add a layer with weights "
        "(e.g. keras.layers.Dense)")
    a, b = keras.Input((8, 8, 3), name="a"), keras.Input((8, 8, 3), name="b")
    joined = keras.layers.Concatenate()([keras.layers.Flatten()(a), keras.layers.Flatten()(b)])
    two = keras.Model([a, b], keras.layers.Dense(5)(joined), name="two")
    with pytest.raises(ModelError) as failed:
        make(two, *arrays())
    assert str(failed.value) == (
        "model 'two' takes 2 inputs ('a', 'b'); towertrain feeds one image tensor per example: "
        "give the model one input (split or concatenate inside it)")


def test_a_model_call_failure_names_the_error_not_in_user_code():
    class Fails(keras.layers.Layer):
        armed = False  # Keras' build calls it once to infer its output

        def call(self, x):
            if Fails.armed:
                raise ValueError("this layer needs two tensors")
            return x
    model = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Dense(5, name="d"),
                              Fails(name="fails")], name="calls")
    Fails.armed = True
    with pytest.raises(ModelError) as failed:
        make(model, *arrays())
    assert str(failed.value).endswith(
        "fails when called on images of shape (8, 8, 3): ValueError in layer Fails: this layer "
        "needs two tensors"), str(failed.value)


def nan_loss(labels, logits):
    return tf.math.log(tf.zeros(tf.shape(labels)[0])) * 0.0


def test_nan_says_where_it_came_from_the_input_or_the_loss_not_the_learning_rate():
    """NaN in from_arrays data, a loss_fn returning NaN: both said 'try a lower
    --init_learning_rate'."""
    images, labels = arrays()
    images[3, 0, 0, 0] = np.nan
    with pytest.raises(towertrain.errors.InputError) as failed:
        towertrain.from_arrays(images, labels, 4)
    assert str(failed.value) == (
        "from_arrays: images hold 1 NaN or Inf value(s), in 1 example(s) (the first: example "
        "3); every step that trains on one would diverge: drop or repair those examples "
        "(numpy: keep = np.isfinite(images).reshape(len(images), -1).all(axis=1))")
    trainer = towertrain.Trainer(
        towertrain.Params(device="cpu", num_gpus=2, num_batches=2, num_warmup_batches=0),
        model=conv_net(), input_source=towertrain.from_arrays(*arrays(), 4), loss_fn=nan_loss)
    try:
        with pytest.raises(towertrain.TrainingDivergedError) as failed:
            trainer.train(write=lambda line: None)
    finally:
        trainer.close()
    assert str(failed.value) == (
        "loss is nan at step 1, from the initial weights before any update, so not from the "
        "learning rate: loss_fn 'nan_loss' returns [nan, nan] for finite logits (zeros) and "
        "labels 0 and 1, so the NaN or Inf comes from the loss itself; fix the loss_fn (a log "
        "or a division of 0?); nothing was applied or saved")
    # Data the input cannot check up front: the first step names the input or the loss.
    trainer = towertrain.Trainer(
        towertrain.Params(device="cpu", num_gpus=2, num_batches=2, num_warmup_batches=0),
        model=conv_net(), input_source=towertrain.from_dataset(
            tf.data.Dataset.from_tensor_slices((images, labels)), 4))
    try:
        with pytest.raises(towertrain.TrainingDivergedError) as failed:
            trainer.train(write=lambda line: None)
    finally:
        trainer.close()
    assert str(failed.value) == (
        "loss is nan at step 1, from the initial weights before any update, so not from the "
        "learning rate: it comes from the input batch (NaN or Inf in the images or labels) or "
        "the loss; check the data with np.isfinite and the model's or loss_fn's math; nothing "
        "was applied or saved")


def test_eval_data_is_checked_as_training_input_is():
    """EvalData with labels outside the model's classes scored 'Accuracy @ 1 =
    0.0000'; one of single examples failed with "Can't split scalars"."""
    trainer = make(conv_net(), *arrays())
    images, _ = arrays()
    labels = np.array([0, 1, 2, 7, 0, 1, 2, 3])
    examples = tf.data.Dataset.from_tensor_slices((images, labels))
    try:
        with pytest.raises(towertrain.errors.InputError) as failed:
            trainer.evaluate(towertrain.EvalData(examples.batch(4), 8, "mine", 4))
        assert str(failed.value) == (
            "the eval set (mine) input: label 7 is outside the model's 5 classes (0 .. 4); "
            "give the last Dense layer 8 units or fix the labels")
        with pytest.raises(towertrain.errors.InputError) as failed:
            trainer.evaluate(towertrain.EvalData(examples, 8, "mine", None))
        assert str(failed.value) == (
            "EvalData (mine): its dataset yields single examples (labels of shape (), images "
            "of shape (8, 8, 3)), not batches; batch it: EvalData(dataset.batch(N), "
            "num_examples, description, N)")
    finally:
        trainer.close()


def test_a_bad_element_mid_run_is_one_line_naming_the_input():
    """A generator's element of the wrong shape at step 3 raised TensorFlow's
    InvalidArgumentError: a page of stack ending in [[IteratorGetNext]]."""
    def examples():
        for i in range(100):
            yield np.zeros((6, 8, 3) if i == 9 else (8, 8, 3), np.float32), np.int32(i % 5)
    spec = (tf.TensorSpec((8, 8, 3), tf.float32), tf.TensorSpec((), tf.int32))
    trainer = towertrain.Trainer(
        towertrain.Params(device="cpu", num_gpus=2, num_batches=5, num_warmup_batches=0),
        model=conv_net(), input_source=towertrain.from_generator(examples, spec, 4))
    try:
        with pytest.raises(towertrain.errors.InputError) as failed:
            trainer.train(write=lambda line: None)
    finally:
        trainer.close()
    assert str(failed.value) == (
        "bad input data in from_generator: TypeError: `generator` yielded an element of shape "
        "(6, 8, 3) where an element of shape (8, 8, 3) was expected.")
