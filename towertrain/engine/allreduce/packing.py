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


def reduce_by_dtype(all_reduce, per_device, devices):
    """all_reduce.reduce over each dtype's gradients apart (packing needs one
    dtype; --fp16_vars has float16 weights beside float32 batch-norm ones),
    in the original order."""
    first = per_device[0]
    dtypes = sorted({g.dtype for g in first}, key=lambda d: d.name)
    if len(dtypes) == 1:
        return all_reduce.reduce(per_device, devices)
    out = [[None] * len(first) for _ in devices]
    for dtype in dtypes:
        index = [k for k, g in enumerate(first) if g.dtype == dtype]
        reduced = all_reduce.reduce([[grads[k] for k in index] for grads in per_device],
                                    devices)
        for device_out, device_reduced in zip(out, reduced):
            for k, tensor in zip(index, device_reduced):
                device_out[k] = tensor
    return out
