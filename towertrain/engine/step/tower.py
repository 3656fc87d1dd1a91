"""One tower: forward, loss and gradients of a Keras model on one device's slice.

The model is called as a pure function of the values the variable manager
hands in (engine/step/model_call.py: as Keras' fit calls it, in a stateless
scope), so the same Keras model serves every device and every variable layout.
"""
import collections
import functools

import keras
import tensorflow as tf

from towertrain import private_api
from towertrain.engine.contract import in_step
from towertrain.engine.step import lockstep
from towertrain.engine.step import model_call
from towertrain.recipe import l2_loss

# correct: how many examples the logits classify right (None: not a classifier).
TowerResult = collections.namedtuple("TowerResult", "loss grads non_trainable correct",
                                     defaults=(None,))


def sparse_softmax_cross_entropy(labels, logits):
    """Per-example loss; the default for classification models that emit logits."""
    return keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)


def call_loss(loss_fn, labels, outputs):
    """loss_fn(labels, outputs) inside the engine's graph functions. Those are
    traced without AutoGraph (their Python branches decide on Python values;
    converting the engine's code cost ~2 s of every start-up), but a user's
    loss is converted as a tf.function would convert it, so a Python `if` or
    `for` on tensors in it still builds graph control flow."""
    if loss_fn is sparse_softmax_cross_entropy:
        return loss_fn(labels, outputs)
    return _converted_call()(loss_fn, labels, outputs)


def _call(fn, *args):
    return fn(*args)


@functools.cache
def _converted_call():
    # In converted code a call converts its callee (user code; Keras and
    # TensorFlow are left as they are), whatever kind of callable it is.
    return tf.autograph.to_graph(_call)


# The forward half of a tower: loss (unscaled, reported), scaled (what is
# differentiated), the model's outputs and its new non-trainable values.
TowerForward = collections.namedtuple("TowerForward", "loss scaled outputs non_trainable")


def compute_tower(model, trainable, non_trainable, images, labels, denominator,
                  loss_fn=sparse_softmax_cross_entropy, weight_decay=0.0, decay_mask=None,
                  loss_scale=None, count_correct=False, unscale=True, loss_options=None):
    """Runs one tower under the caller's device scope.

    The tower's loss is sum(per-example loss) / denominator. With the global
    batch size as denominator, summing the towers' gradients gives exactly the
    gradient of the mean loss over the global batch, however the batch was
    split. L2 weight decay on the variables where decay_mask is True is
    weighted by the tower's share of the batch, so over all towers it counts
    exactly once (and the reported loss includes it, as tf_cnn_benchmarks').

    The model may compute in float16 or bfloat16 (a Keras mixed policy): its
    outputs are cast to float32 before the loss, and gradients reach the
    float32 variables as float32. loss_scale (a float32 scalar) multiplies the
    loss before differentiation, so small float16 gradients do not underflow,
    and divides the gradients after (unscale=False leaves that to the
    exchange, for a half-precision transfer); the loss returned is unscaled.
    loss_options: towertrain.recipe.l2_loss.LossOptions (how the decay term is
    computed, whether the returned loss leaves it out).
    """
    with tf.GradientTape() as tape:
        tape.watch(trainable)
        result = forward(model, trainable, non_trainable, images, labels, denominator,
                         loss_fn, weight_decay, decay_mask, loss_scale, loss_options)
    grads = tape.gradient(result.scaled, trainable)
    return finish(result, grads, trainable, labels, loss_scale, count_correct, unscale)


def forward(model, trainable, non_trainable, images, labels, denominator,
            loss_fn=sparse_softmax_cross_entropy, weight_decay=0.0, decay_mask=None,
            loss_scale=None, loss_options=None, examples=None):
    """The forward half of compute_tower: a TowerForward. examples: where the
    images were padded (a lockstep's empty slice), how many are real: the
    outputs past them are cut before the loss."""
    called = model_call.call(model, trainable, non_trainable, images, training=True)
    outputs = tf.nest.map_structure(_as_float32, called.outputs)
    if examples is not None:
        outputs = tf.nest.map_structure(lambda t: t[:examples], outputs)
        images = tf.nest.map_structure(lambda t: t[:examples], images)
    per_example = tf.cast(call_loss(loss_fn, labels, outputs), tf.float32)
    if loss_fn is not sparse_softmax_cross_entropy:  # a user's loss: one value per example?
        per_example = in_step.per_example_losses(per_example, images, loss_fn)
    denominator = tf.cast(denominator, tf.float32)
    base = loss = tf.reduce_sum(per_example) / denominator
    options = loss_options or l2_loss.LossOptions()
    decayed = [v for v, decay in zip(trainable, decay_mask or []) if decay]
    share = tf.cast(tf.shape(per_example)[0], tf.float32) / denominator
    if weight_decay and decayed:
        loss += weight_decay * share * l2_loss.l2_loss(decayed, options.single_op)
    if called.losses:
        loss += share * model_losses(called.losses)
    scaled = loss * loss_scale if loss_scale is not None else loss
    return TowerForward(base if options.report_base else loss, scaled, outputs,
                        list(called.non_trainable))


def model_losses(losses):
    """The sum of the losses the model adds (Keras' Model.losses: weight and
    activity regularizers, add_loss), each summed to a scalar as Keras'
    compute_loss does. Weighted by the tower's share of the batch, a weight
    regularizer counts once per step over all towers, as in Keras' fit; a
    loss of the tower's activations (Keras divides an activity regularizer by
    the batch) is averaged over the towers by their examples, as the
    per-example loss is (Keras' tf.distribute averages it over replicas)."""
    return tf.add_n([tf.cast(tf.reduce_sum(value), tf.float32) for value in losses])


def finish(result, grads, trainable, labels, loss_scale=None, count_correct=False,
           unscale=True):
    """The TowerResult of a TowerForward given the gradients of its scaled loss."""
    # A variable the loss does not reach still takes part in the exchange.
    grads = [tf.zeros_like(v) if g is None else g for g, v in zip(grads, trainable)]
    if loss_scale is not None and unscale:
        grads = [g / tf.cast(loss_scale, g.dtype) for g in grads]  # float16: --fp16_vars
    correct = None
    if count_correct:  # training top-1, for the step lines and summaries
        hits = tf.equal(tf.argmax(result.outputs, axis=-1, output_type=tf.int64),
                        tf.cast(tf.reshape(labels, [-1]), tf.int64))
        correct = tf.reduce_sum(tf.cast(hits, tf.int64))
    return TowerResult(result.loss, grads, result.non_trainable, correct)


def compute_towers_in_lockstep(towers, reduce_device, loss_scale=None, count_correct=False,
                               unscale=True, across=None):
    """Every tower's TowerResult, with layers free to combine values across
    towers during the forward pass (--sync_batch_norm; see towertrain.engine.step.lockstep).

    towers: one function per tower returning (trainable, labels, TowerForward),
    built under its own device scope. The gradients are those of the sum of
    all towers' losses: a tower's variables then also receive what its slice
    contributed to the shared statistics of the other towers' losses, and the
    towers' gradients still sum to the gradient of the global batch's loss.
    across: the sum over workers of a cross-tower point (lockstep.Lockstep).
    """
    traced = lockstep.Lockstep(len(towers), reduce_device, across).run(towers)
    flat = [v for trainable, _, _ in traced for v in trainable]
    # tf.gradients places each gradient op with its forward op, on the tower's device.
    grads = tf.gradients([result.scaled for _, _, result in traced], flat,
                         unconnected_gradients=tf.UnconnectedGradients.ZERO)
    results, start = [], 0
    for trainable, labels, result in traced:
        own = grads[start:start + len(trainable)]
        start += len(trainable)
        with tf.device(result.loss.device):
            results.append(finish(result, own, trainable, labels, loss_scale, count_correct,
                                  unscale))
    return results


def is_classifier(model):
    """One output of rank 2 (batch, classes): top-1 means something."""
    outputs = getattr(model, "outputs", None)  # a subclassed model may have none
    return bool(outputs) and len(outputs) == 1 and len(outputs[0].shape) == 2


def _as_float32(tensor):
    if tensor.dtype in (tf.float16, tf.bfloat16):
        return tf.cast(tensor, tf.float32)
    return tensor


# Every random draw of a training step is a function of the run's seed and
# the draw's place in the run: the global step (updates applied) and the
# tower's slot, micro-batch x cluster towers + global tower index. Before a
# tower runs, each Keras seed-generator state it reads is set from a
# stateless fold-in of (seed, step, slot, generator), so no random state is
# carried from step to step: nothing to save, nothing a worker can lose at a
# stop, and every topology with the same slots (2 workers x 1 device, 1 x 2;
# 1 device accumulating 2 micro-batches) draws the same values. The states
# the towers hand back are kept as any non-trainable value and never read.


def seed_state_indices(model):
    """Positions of seed-generator states in model.non_trainable_variables."""
    states = {id(generator.state) for _, _, generator in private_api.seed_generators(model)}
    return [i for i, v in enumerate(model.non_trainable_variables) if id(v) in states]


def draw_key(seed, step, slot):
    """The key of one tower's draws in one step: (seed, step, slot) folded in."""
    key = tf.random.experimental.stateless_fold_in(
        tf.constant([seed, 0], tf.int64), tf.cast(step, tf.int64))
    return tf.random.experimental.stateless_fold_in(key, tf.cast(slot, tf.int64))


def seeded_states(values, indices, key):
    """`values` with the seed state at each of `indices` set from `key`
    (each generator its own stream: the key with its position folded in)."""
    out = list(values)
    for position, i in enumerate(indices):
        state = tf.random.experimental.stateless_fold_in(key, tf.constant(position, tf.int64))
        out[i] = tf.cast(state, out[i].dtype)
    return out


def all_finite(result, gradients=True):
    """One boolean: the tower's loss and (gradients=True) every gradient are
    finite. gradients=False where the step checks the summed gradients
    instead (gradients_finite): a sum holds a NaN or an infinity of any term."""
    checks = [tf.reduce_all(tf.math.is_finite(result.loss))]
    if gradients:
        return tf.reduce_all(tf.stack(checks + [gradients_finite(result.grads)]))
    return checks[0]


def gradients_finite(grads):
    """One boolean: every floating gradient in the list is finite."""
    return tf.reduce_all(tf.stack([tf.reduce_all(tf.math.is_finite(g)) for g in grads
                                   if g.dtype.is_floating] or [tf.constant(True)]))
