"""What Keras' fit would use of a model passed to the Trainer is used, or the
Trainer refuses naming it before any step: the `training` phase (also for a
call() without a `training` argument), compile() settings, the dtype policy,
the data format its layers compute in, and the pixel range it is fed."""
import inspect

import keras
import numpy as np
import pytest

import towertrain
from towertrain.engine.contract import keras_model
from towertrain.errors import InputError, ModelError, ParamsError

LR = 0.1


class WithoutTraining(keras.Model):
    """Ordinary Keras: call(self, x) has no `training` argument. Keras' fit then
    calls it without one, so its batch norm runs in its default (inference)
    phase: trained as fit trains it, not failing on a `training` it lacks."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.norm = keras.layers.BatchNormalization(name="norm")
        self.flat = keras.layers.Flatten()
        self.logits = keras.layers.Dense(3, name="logits")

    def call(self, x):
        return self.logits(self.flat(self.norm(x)))


class TrainingNotPassedOn(WithoutTraining):
    """A `training` argument its call() does not hand to the layers below: they
    train in the training phase all the same (Keras' call context), as under fit."""

    def call(self, x, training=None):
        return self.logits(self.flat(self.norm(x)))


def data(n=12):
    rng = np.random.default_rng(1)
    return (rng.standard_normal((n, 4, 4, 2)).astype(np.float32) * 3 + 1,
            rng.integers(0, 3, n).astype(np.int64))


def dense_model(**layer_options):
    return keras.Sequential([keras.Input((4, 4, 2)), keras.layers.Flatten(),
                             keras.layers.Dense(3, name="logits", **layer_options)],
                            name="mine")


def trainer(model, images=None, labels=None, **params):
    if images is None:
        images, labels = data()
    options = dict(device="cpu", num_gpus=1, init_learning_rate=LR, num_warmup_batches=0,
                   num_batches=3)
    options.update(params)
    return towertrain.Trainer(towertrain.Params(**options), model=model,
                              input_source=towertrain.from_arrays(images, labels, 4))


@pytest.mark.parametrize("cls", [WithoutTraining, TrainingNotPassedOn])
def test_a_subclassed_model_trains_in_the_training_phase_as_keras_fit(cls):
    images, labels = data()
    keras.utils.set_random_seed(4)
    model, reference = cls(name="sub"), cls(name="reference")
    model(images[:1])
    reference(images[:1])
    reference.set_weights(model.get_weights())
    run = trainer(model, images, labels)
    for _ in range(3):
        run.step()
    run.sync_model()
    run.close()
    reference.compile(optimizer=keras.optimizers.SGD(LR),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    reference.fit(images, labels, batch_size=4, epochs=1, shuffle=False, verbose=0)
    # The phase is fit's: the moving statistics move only when call() takes `training`.
    moved = not np.allclose(model.get_layer("norm").moving_mean.numpy(), 0)
    assert moved == (cls is TrainingNotPassedOn)
    for got, want in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_subclassed_model_not_yet_called_is_told_to_call_it():
    model = WithoutTraining(name="sub")
    with pytest.raises(ModelError) as refused:
        trainer(model)
    assert str(refused.value) == (
        "model 'sub' has no variables yet: a subclassed keras.Model creates them when it is "
        "first called (model.build(shape) creates none in Keras 3); call it on one batch, "
        "e.g. model(images[:1]), before passing it to the Trainer")
    model(data()[0][:1])  # what the message advises works
    trainer(model).close()


ADAMW_REFUSAL = (
    "model 'mine' is compiled (optimizer=AdamW(learning_rate=0.001, weight_decay=0.5, "
    "clipnorm=1), loss='sparse_categorical_crossentropy'), but the Trainer trains with its "
    "Params and loss_fn, never with compile()'s settings, which would be ignored: give the "
    "optimizer as Params(optimizer=, init_learning_rate=, gradient_clip=, weight_decay=); "
    "the loss as Trainer(loss_fn=fn(labels, outputs), one value per example); and pass the "
    "model uncompiled (a saved one: keras.saving.load_model(path, compile=False))")


def test_a_compiled_model_is_refused_naming_its_optimizer_and_loss():
    model = dense_model()
    model.compile(optimizer=keras.optimizers.AdamW(1e-3, weight_decay=0.5, clipnorm=1.0),
                  loss="sparse_categorical_crossentropy")
    with pytest.raises(ParamsError) as refused:
        trainer(model)
    assert str(refused.value) == ADAMW_REFUSAL


# A value other than its default for each compile() argument Keras records.
COMPILED = {"loss": "mse", "loss_weights": [2.0], "metrics": ["accuracy"],
            "weighted_metrics": ["accuracy"], "run_eagerly": True, "steps_per_execution": 4,
            "jit_compile": True}


def test_every_compile_argument_is_decided_and_named_when_given():
    arguments = set(inspect.signature(keras.Model.compile).parameters) - {"self"}
    assert arguments == set(keras_model.COMPILE_SETTINGS)  # a new one: decide it there
    for name, value in COMPILED.items():
        model = dense_model()
        model.compile(**{name: value})
        with pytest.raises(ParamsError) as refused:
            trainer(model)
        message = str(refused.value)
        assert f", {name}={value!r})" in message, message
        assert message.startswith("model 'mine' is compiled (optimizer=RMSprop(learning_rate"
                                  "=0.001), "), message
        assert keras_model.COMPILE_SETTINGS[name] in message
    model = dense_model()
    model.compile(auto_scale_loss=False)  # not in Keras' compile config: still refused
    with pytest.raises(ParamsError, match=r"is compiled \(optimizer=RMSprop\("):
        trainer(model)


@pytest.mark.parametrize("policy,message", [
    ("mixed_float16", "model 'mine' computes in half precision (dtype policy mixed_float16) "
                      "but the run is float32 (neither --use_fp16 nor --use_bf16): pass "
                      "Params(use_fp16=True) to train it so (with loss scaling, as Keras' fit "
                      "gives float16), or build the model under the float32 policy"),
    ("mixed_bfloat16", "model 'mine' computes in half precision (dtype policy mixed_bfloat16) "
                       "but the run is float32 (neither --use_fp16 nor --use_bf16): pass "
                       "Params(use_bf16=True) to train it so, or build the model under the "
                       "float32 policy"),
])
def test_a_half_precision_policy_in_a_float32_run_is_refused(policy, message):
    with pytest.raises(ParamsError) as refused:
        trainer(dense_model(dtype=policy))
    assert str(refused.value) == message


def conv_model(data_format):
    shape = (2, 4, 4) if data_format == "channels_first" else (4, 4, 2)
    return keras.Sequential([keras.Input(shape), keras.layers.Conv2D(
        2, 3, data_format=data_format, name="conv"), keras.layers.Flatten(),
        keras.layers.Dense(3, name="logits")], name="mine")


def test_the_data_format_follows_the_model_or_a_params_naming_another_is_refused():
    with pytest.raises(ParamsError) as refused:
        trainer(conv_model("channels_last"), data_format="NCHW")
    assert str(refused.value) == (
        "--data_format=NCHW: model 'mine' computes in NHWC (its layer 'conv' has "
        "data_format='channels_last'), and a model passed in is trained in the layout it was "
        "built for; drop data_format (the run follows the model), or build the model with "
        "data_format='channels_first'")
    images, labels = data()
    run = trainer(conv_model("channels_first"), images.transpose(0, 3, 1, 2), labels)
    assert run.data_format == "NCHW"
    assert dict(run.header_info())["Data format"] == "NCHW"
    assert run.step().finite
    run.close()


def test_raw_pixel_values_are_refused_unless_the_model_rescales_them():
    images, labels = data()
    pixels = np.round((images - images.min()) / np.ptp(images) * 255).astype(np.float32)
    with pytest.raises(InputError) as refused:
        trainer(dense_model(), pixels, labels)
    assert str(refused.value) == (
        "from_arrays: images hold values 0..255 (the range of raw pixels) and model 'mine' "
        "does not rescale them (no keras.layers.Rescaling or Normalization layer); pass "
        "images / 255 (or standardize each image, as the CIFAR-10 reader does), or start the "
        "model with keras.layers.Rescaling(1 / 255)")
    trainer(dense_model(), pixels / 255, labels).close()
    rescaling = keras.Sequential([keras.Input((4, 4, 2)), keras.layers.Rescaling(1 / 255),
                                  keras.layers.Flatten(), keras.layers.Dense(3)])
    trainer(rescaling, pixels, labels).close()


def test_the_header_of_a_model_passed_in_names_no_model_the_user_did_not_choose():
    images, labels = data()
    run = towertrain.Trainer(towertrain.Params(device="cpu", num_gpus=1),
                             model=dense_model(), input_source=towertrain.from_arrays(
                                 images, labels, 4))
    header = dict(run.header_info())
    run.close()
    assert header["Model"] == "mine"
    assert header["Learning rate"] == (
        "0.005, constant (the default for a model passed in, as no init_learning_rate is "
        "given; Params(init_learning_rate=) sets it)")
    assert "trivial" not in repr(header)


class SoftmaxInCall(keras.Model):
    """A softmax no layer names: the check tests what the outputs are."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.flat = keras.layers.Flatten()
        self.logits = keras.layers.Dense(3)

    def call(self, x):
        return keras.ops.softmax(self.logits(self.flat(x)))


def test_a_model_emitting_probabilities_is_refused_whatever_makes_them():
    images, labels = data()
    lambda_softmax = keras.Sequential([
        keras.Input((4, 4, 2)), keras.layers.Flatten(), keras.layers.Dense(3),
        keras.layers.Lambda(keras.ops.softmax)], name="mine")
    subclassed = SoftmaxInCall(name="mine")
    subclassed(images[:1])
    for model in (lambda_softmax, subclassed):
        with pytest.raises(ModelError) as refused:
            trainer(model, images, labels)
        assert str(refused.value) == (
            "model 'mine' emits probabilities (on sample images its 3 outputs per example lie "
            "in 0..1 and sum to 1: a softmax, in a layer or in call()); the default loss takes "
            "logits: drop the softmax (apply it when predicting), or pass loss_fn=")
    # A loss of the user's own may take probabilities.
    towertrain.Trainer(towertrain.Params(device="cpu", num_gpus=1), model=subclassed,
                       input_source=towertrain.from_arrays(images, labels, 4),
                       loss_fn=lambda y, p: keras.losses.sparse_categorical_crossentropy(
                           y, p)).close()
