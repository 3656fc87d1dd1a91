"""FusedBatchNormalization against keras.layers.BatchNormalization (1e-5)."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain.models import FusedBatchNormalization

TOL = dict(rtol=1e-5, atol=1e-5)


def _pair(axis, shape, scale=True, center=True, momentum=0.9, epsilon=1e-3):
    """A fused and a Keras layer with the same random (non-default) weights."""
    fused = FusedBatchNormalization(axis=axis, momentum=momentum, epsilon=epsilon,
                                    scale=scale, center=center)
    ref = keras.layers.BatchNormalization(axis=axis, momentum=momentum, epsilon=epsilon,
                                          scale=scale, center=center)
    fused.build(shape)
    ref.build(shape)
    rng = np.random.RandomState(1)
    assert [w.path.split("/")[-1] for w in fused.weights] == \
        [w.path.split("/")[-1] for w in ref.weights]
    for a, b in zip(fused.weights, ref.weights):
        value = rng.uniform(0.5, 1.5, size=a.shape).astype("float32")
        a.assign(value)
        b.assign(value)
    return fused, ref


def _inputs(shape):
    return (np.random.RandomState(0).randn(*shape) * 2.0 + 0.5).astype("float32")


@pytest.mark.parametrize("axis,shape", [(-1, (4, 5, 6, 3)), (3, (2, 3, 3, 8)),
                                        (1, (4, 3, 5, 6)), (1, (2, 8, 3, 3))])
@pytest.mark.parametrize("scale,center", [(True, True), (False, True), (True, False)])
def test_matches_keras_training_and_inference(axis, shape, scale, center):
    fused, ref = _pair(axis, shape, scale=scale, center=center)
    x = _inputs(shape)
    for step in range(2):  # two updates: moving stats keep tracking Keras'
        np.testing.assert_allclose(fused(x + step, training=True),
                                   ref(x + step, training=True), **TOL)
        for a, b in zip(fused.weights, ref.weights):
            np.testing.assert_allclose(a.numpy(), b.numpy(), err_msg=a.path, **TOL)
    np.testing.assert_allclose(fused(x, training=False), ref(x, training=False), **TOL)
    np.testing.assert_allclose(fused(x), ref(x), **TOL)  # default is inference


@pytest.mark.parametrize("axis,shape", [(-1, (4, 5, 6, 3)), (1, (4, 3, 5, 6))])
def test_gradients_match_keras(axis, shape):
    fused, ref = _pair(axis, shape)
    x = tf.constant(_inputs(shape))
    weights = np.random.RandomState(2).randn(*shape).astype("float32")
    grads = []
    for layer in (fused, ref):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(layer(x, training=True) * weights)
        grads.append(tape.gradient(loss, [x] + layer.trainable_weights))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)


def test_stateless_call_returns_updated_moving_stats():
    """The engine calls models statelessly: updates must come back, not be lost."""
    shape = (4, 6, 6, 3)
    inputs = keras.Input(shape[1:])
    model = keras.Model(inputs, FusedBatchNormalization(momentum=0.5)(inputs))
    x = _inputs(shape)
    _, new_non_trainable = model.stateless_call(
        [v.value for v in model.trainable_variables],
        [v.value for v in model.non_trainable_variables], x, training=True)
    mean = x.mean(axis=(0, 1, 2))
    np.testing.assert_allclose(new_non_trainable[0], 0.5 * mean, **TOL)
    np.testing.assert_allclose(new_non_trainable[1], 0.5 + 0.5 * x.var(axis=(0, 1, 2)),
                               **TOL)


def test_rejects_non_4d_input_and_bad_axis():
    with pytest.raises(ValueError, match="4-D"):
        FusedBatchNormalization().build((2, 3))
    with pytest.raises(ValueError, match="channel axis"):
        FusedBatchNormalization(axis=2).build((2, 3, 4, 5))


def test_config_round_trip():
    layer = FusedBatchNormalization(axis=1, momentum=0.9, epsilon=1e-5, scale=False)
    clone = FusedBatchNormalization.from_config(layer.get_config())
    assert (clone.axis, clone.momentum, clone.epsilon, clone.scale, clone.center) == \
        (1, 0.9, 1e-5, False, True)
