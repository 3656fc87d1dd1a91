"""Gradient clipping over one whole gradient, right before the update.

Every variable manager calls clip() in its `apply` on ONE full list of summed
gradients (every trainable variable's), before any optimizer sees them:

- replicated: on each copy's all-reduced list, on that copy's device. Every
  copy holds the same bits, so every copy clips to the same bits.
- parameter_server: on the full list of sums across all parameter devices: one
  global norm over every variable, then each optimizer group applies its part.
- independent: on each tower's own list.

Keras' clipnorm/clipvalue/global_clipnorm stay unused: they would clip each
optimizer group (one per parameter device) on its own.
"""
import contextlib

import tensorflow as tf


def _on_device_of(tensor):
    """Ops beside `tensor` (a gradient may live on any parameter device)."""
    return tf.device(tensor.device) if tensor.device else contextlib.nullcontext()


def global_norm(grads):
    """sqrt(sum of every element squared): each tensor's part where it lives, the
    sum under the caller's device scope."""
    squares = []
    for g in grads:
        with _on_device_of(g):
            squares.append(tf.reduce_sum(tf.square(tf.cast(g, tf.float32))))
    return tf.sqrt(tf.add_n(squares))


def clip(grads, gradient_clip=None, global_norm_clip=None):
    """Returns `grads` clipped: first each element to [-gradient_clip, gradient_clip]
    (tf_cnn_benchmarks' --gradient_clip, Keras' clipvalue), then the whole list
    scaled by global_norm_clip / max(norm, global_norm_clip) (Keras'
    global_clipnorm). The scale is computed once, under the caller's device
    scope. A norm that overflows float32 gives a zero update, never NaN."""
    grads = list(grads)
    if gradient_clip is not None:
        with tf.name_scope("gradient_clip"):
            clipped = []
            for g in grads:
                with _on_device_of(g):
                    clipped.append(tf.clip_by_value(g, -gradient_clip, gradient_clip))
            grads = clipped
    if global_norm_clip is not None:
        with tf.name_scope("global_norm_clip"):
            limit = tf.constant(global_norm_clip, tf.float32)
            scale = limit / tf.maximum(global_norm(grads), limit)
            scaled = []
            for g in grads:
                with _on_device_of(g):
                    scaled.append(g * tf.cast(scale, g.dtype))
            grads = scaled
    return grads


def clip_for(clipping, grads):
    """clip() with the run's --gradient_clip and --global_norm_clip."""
    if not clipping:  # None, or nothing to clip
        return list(grads)
    return clip(grads, clipping.gradient_clip, clipping.global_norm_clip)


def describe(clipping):
    """The header's 'Gradient clip' value, or None when nothing is clipped."""
    parts = []
    if clipping.gradient_clip is not None:
        parts.append(f"each element to [-{clipping.gradient_clip:g}, "
                     f"{clipping.gradient_clip:g}]")
    if clipping.global_norm_clip is not None:
        parts.append(f"global norm {clipping.global_norm_clip:g} (of the summed gradient, "
                     "once over all variables)")
    return "; ".join(parts) or None
