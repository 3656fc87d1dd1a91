"""--sync_batch_norm: batch-norm statistics over the whole global batch.

While the towers are traced in lockstep (towertrain.engine.step.lockstep), a batch-norm
layer in training computes its slice's per-channel sum, sum of squares and
example count, sums the three over the towers, and normalizes with the global
mean and (biased) variance. Counts travel with the sums, so uneven slices
(and an empty one) weigh exactly as in one batch: an empty slice runs on one
stand-in example (engine/step/towers.py) whose sums its Member's `present`
(0.0) zeroes. Outside a lockstep, the
layers behave as usual.

Supported layers: towertrain's FusedBatchNormalization (the model zoo's) and
keras.layers.BatchNormalization, whose moments are rerouted per instance by
`attach`. Keras' own `synchronized=True` needs a tf.distribute replica
context, which the engine does not use.
"""
import keras
import tensorflow as tf

from towertrain import private_api
from towertrain.engine.step import lockstep
from towertrain.models import FusedBatchNormalization


def moments(member, inputs, axes, weights=None):
    """(mean, variance) per channel over every tower's slice, float32.

    weights: optional 0/1 mask broadcastable to inputs (Keras' masked batch norm).
    """
    x = tf.cast(inputs, tf.float32)
    if weights is None:
        count = tf.cast(tf.reduce_prod(tf.gather(tf.shape(x), list(axes))), tf.float32)
        local = [tf.reduce_sum(x, axes), tf.reduce_sum(tf.square(x), axes), count]
    else:
        weights = tf.broadcast_to(tf.cast(weights, tf.float32), tf.shape(x))
        local = [tf.reduce_sum(x * weights, axes), tf.reduce_sum(tf.square(x) * weights, axes),
                 tf.reduce_sum(weights, axes)]
    if member.present is not None:  # an empty slice's stand-in example counts nothing
        local = [value * member.present for value in local]
    total, total_squares, total_count = member.all_sum(local)
    mean = total / total_count
    # E[x^2] - E[x]^2 can dip below zero by rounding when the variance is ~0.
    variance = tf.maximum(total_squares / total_count - tf.square(mean), 0.0)
    return mean, variance


def batch_norm_layers(model):
    """(towertrain FusedBatchNormalization layers, keras BatchNormalization layers)."""
    fused, stock = [], []
    for layer in private_api.flatten_layers(model):
        if isinstance(layer, FusedBatchNormalization):
            fused.append(layer)
        elif isinstance(layer, keras.layers.BatchNormalization):
            stock.append(layer)
    return fused, stock


def attach(model):
    """Makes the model's batch-norm layers synchronize inside a lockstep;
    returns how many layers will. Idempotent."""
    fused, stock = batch_norm_layers(model)
    for layer in fused:  # the layer's own hook: models never import the engine
        layer.cross_tower_moments = _lockstep_moments
    for layer in stock:  # Keras' own layer: its moments rerouted per instance
        private_api.reroute_batch_norm_moments(layer, _keras_moments)
    return len(fused) + len(stock)


def _lockstep_moments(inputs, axes):
    """FusedBatchNormalization.cross_tower_moments: (mean, variance) over every
    tower inside a lockstep, None outside one (the layer then uses its own)."""
    member = lockstep.current()
    return None if member is None else moments(member, inputs, axes)


def _keras_moments(layer, original, inputs, mask):
    member = lockstep.current()
    if member is None:
        return original(inputs, mask)
    weights = None if mask is None else tf.expand_dims(mask, -1)
    mean, variance = moments(member, inputs, private_api.batch_norm_reduction_axes(layer), weights)
    return tf.cast(mean, inputs.dtype), tf.cast(variance, inputs.dtype)
