"""The losses a Keras model adds (Model.losses: weight regularizers, activity
regularizers, a layer's add_loss) are trained as Keras' fit trains them: the
step's loss equals Keras' compute_loss on the same batch and weights, and 20
steps on 2 towers equal stock Keras' fit on one device. The Keras API's loss
mechanisms are enumerated, so one Keras adds fails here, not silently in a run."""
import inspect

import keras
import numpy as np
import pytest

import towertrain

BATCH, STEPS, LR = 8, 20, 0.05


class ActivationPenalty(keras.layers.Layer):
    """A layer of the user's own that adds a loss of its input (add_loss)."""

    def call(self, x):
        self.add_loss(0.3 * keras.ops.mean(keras.ops.square(x)))
        return x


def regularized_model():
    """Every mechanism by which a Keras layer adds a loss, at strengths that
    make the regularization a large part of the loss."""
    l2 = keras.regularizers.l2
    return keras.Sequential([
        keras.Input((6, 6, 2)),
        keras.layers.Conv2D(3, 3, kernel_regularizer=l2(0.5), bias_regularizer=l2(0.2),
                            activity_regularizer=l2(0.1), name="conv"),
        keras.layers.DepthwiseConv2D(2, depthwise_regularizer=keras.regularizers.l1(0.05),
                                     name="depthwise"),
        keras.layers.LayerNormalization(gamma_regularizer=l2(0.3),
                                        beta_regularizer=l2(0.3), name="norm"),
        ActivationPenalty(name="penalty"),
        keras.layers.Flatten(),
        keras.layers.Dense(4, kernel_regularizer=l2(0.4), name="logits"),
    ], name="regularized")


def data(n=BATCH * STEPS):
    rng = np.random.default_rng(5)
    return (rng.standard_normal((n, 6, 6, 2)).astype(np.float32),
            rng.integers(0, 4, n).astype(np.int64))


def reference_like(model):
    """A stock Keras copy of `model` with its weights, compiled as fit trains it."""
    reference = regularized_model()
    reference.set_weights(model.get_weights())
    reference.compile(optimizer=keras.optimizers.SGD(LR),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return reference


def trainer_of(model, images, labels, towers=2):
    params = towertrain.Params(device="cpu", num_gpus=towers, variable_update="replicated",
                               init_learning_rate=LR)
    return towertrain.Trainer(params, model=model,
                              input_source=towertrain.from_arrays(images, labels, BATCH))


@pytest.mark.parametrize("towers", [1, 2])
def test_step_loss_equals_keras_compute_loss(towers):
    keras.utils.set_random_seed(2)
    model = regularized_model()
    images, labels = data(BATCH)
    reference = reference_like(model)
    predicted = reference(images, training=True)
    want = float(reference.compute_loss(images, labels, predicted))
    regularization = float(keras.ops.sum([keras.ops.sum(v) for v in reference.losses]))
    assert regularization > 0.5 * want  # the check below sees the regularization
    trainer = trainer_of(model, images, labels, towers)
    got = float(trainer.step())  # the loss of the weights before the update
    trainer.close()
    assert got == pytest.approx(want, rel=1e-5)


def test_twenty_steps_on_two_towers_equal_stock_keras_fit():
    keras.utils.set_random_seed(3)
    model = regularized_model()
    images, labels = data()
    reference = reference_like(model)
    trainer = trainer_of(model, images, labels)
    for _ in range(STEPS):
        trainer.step()
    trainer.sync_model()
    trainer.close()
    reference.fit(images, labels, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    for variable, got, want in zip(model.weights, model.get_weights(),
                                   reference.get_weights()):
        scale = max(np.abs(want).max(), 1e-3)
        assert np.abs(got - want).max() <= 1e-5 * scale, variable.path


# Every way Keras' layer API adds a loss, and where the test above covers it.
LOSS_MECHANISMS = {
    "activity_regularizer": "Layer(activity_regularizer=): conv",
    "add_loss": "a layer's own add_loss: penalty",
    "losses": "Model.losses, what the step adds",
    "regularizer": "add_weight(regularizer=) / Variable.regularizer: every *_regularizer "
                   "argument below",
}
# Every *_regularizer argument of keras.layers: a weight's regularizer (the
# Variable.regularizer mechanism) unless named above.
WEIGHT_REGULARIZER_ARGUMENTS = {
    "kernel_regularizer", "bias_regularizer", "depthwise_regularizer",
    "pointwise_regularizer", "gamma_regularizer", "beta_regularizer",
    "recurrent_regularizer", "embeddings_regularizer", "alpha_regularizer",
}


def _layer_classes():
    for name in dir(keras.layers):
        cls = getattr(keras.layers, name)
        if inspect.isclass(cls) and issubclass(cls, keras.layers.Layer):
            yield cls


def test_every_keras_loss_mechanism_is_known():
    # The Layer API's members about losses and regularization.
    members = {name for name in dir(keras.layers.Layer)
               if ("loss" in name.lower() or "regulariz" in name.lower())
               and not name.startswith("_")}
    members |= {name for name in inspect.signature(keras.layers.Layer.add_weight).parameters
                if "regulariz" in name}
    members |= {name for name in inspect.signature(keras.layers.Layer.__init__).parameters
                if "regulariz" in name}
    assert members == set(LOSS_MECHANISMS)
    arguments = {name for cls in _layer_classes()
                 for name in inspect.signature(cls.__init__).parameters
                 if name.endswith("_regularizer")}
    assert arguments - {"activity_regularizer"} == WEIGHT_REGULARIZER_ARGUMENTS


# Layers to try each argument on, with an input shape (the first that takes it).
SAMPLE_LAYERS = [
    (lambda **kw: keras.layers.Dense(2, **kw), (None, 3)),
    (lambda **kw: keras.layers.DepthwiseConv2D(2, **kw), (None, 4, 4, 2)),
    (lambda **kw: keras.layers.SeparableConv2D(2, 2, **kw), (None, 4, 4, 2)),
    (lambda **kw: keras.layers.BatchNormalization(**kw), (None, 3)),
    (lambda **kw: keras.layers.SimpleRNN(2, **kw), (None, 3, 2)),
    (lambda **kw: keras.layers.Embedding(5, 2, **kw), (None, 3)),
    (lambda **kw: keras.layers.PReLU(**kw), (None, 3)),
]


@pytest.mark.parametrize("argument", sorted(WEIGHT_REGULARIZER_ARGUMENTS))
def test_every_regularizer_argument_regularizes_a_weight(argument):
    """Each *_regularizer argument lands on a weight's Variable.regularizer,
    which Model.losses reads with the step's values (what the step adds)."""
    for make, shape in SAMPLE_LAYERS:
        try:
            layer = make(**{argument: keras.regularizers.l2(1.0)})
        except (TypeError, ValueError):  # not this layer's argument
            continue
        layer.build(shape)
        assert any(v.regularizer is not None for v in layer.trainable_weights), argument
        return
    pytest.fail(f"{argument}: no layer in SAMPLE_LAYERS takes it; add one that does")
