"""Packing a device's gradient list into one flat vector and back.

One big reduction instead of one per variable: fewer ops, fewer kernel
launches and transfers (tf_cnn_benchmarks' gradient repacking, in its
simplest form). All tensors in a list must share a dtype.
"""
import tensorflow as tf


def pack(tensors):
    """(flat vector, spec) where spec lets `unpack` restore the list."""
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) != 1:
        raise ValueError(f"cannot pack mixed dtypes {sorted(d.name for d in dtypes)}")
    spec = [(t.shape, t.shape.num_elements()) for t in tensors]
    return tf.concat([tf.reshape(t, [-1]) for t in tensors], axis=0), spec


def unpack(flat, spec):
    pieces = tf.split(flat, [size for _, size in spec])
    return [tf.reshape(piece, shape) for piece, (shape, _) in zip(pieces, spec)]
