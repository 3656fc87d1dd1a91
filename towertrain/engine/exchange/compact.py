"""Compact gradient transfer (--compact_gradient_transfer): any all-reduce
algorithm, run on half-precision copies of the gradients.

Each device casts its pack (one flat vector) to the
transfer dtype (float16, or bfloat16 with --use_bf16) on that device; the
wrapped algorithm exchanges and sums those vectors; each device casts the sum
back to the gradients' dtype and unpacks it. So everything that crosses a
device is half the bytes, and the optimizer receives float32 again.

The sum is done in the transfer dtype, as in tf_cnn_benchmarks: it is the
same sum as the float32 path (no 1/N scaling, the same order), only rounded
to the transfer dtype after each add. Summing in float32 instead would buy
almost nothing: every partial sum that crosses a device (each ring hop, NCCL's
own hops, the central sum copied back) must be in the transfer dtype anyway,
and one add of two halves rounded to half is what a half-precision add does.
(NCCL also offers no choice: it sums in its input's dtype.) The costs are the
transfer dtype's: float16 keeps 11 significant bits and overflows above
65504 (a gradient or a sum beyond that becomes inf, not a clipped value, so
it stays visible); bfloat16 keeps float32's range with 8 significant bits.

Every device casts the same summed bits back the same way, so the copies stay
bit-identical. On one device nothing crosses a device and nothing is cast.
"""
import tensorflow as tf

from .base import AllReduce


class CompactTransfer(AllReduce):
    """`inner`'s all-reduce with the data it moves in `dtype`."""

    def __init__(self, inner, dtype):
        dtype = tf.as_dtype(dtype)
        if not dtype.is_floating:
            raise ValueError(f"compact transfer needs a floating dtype, got {dtype.name}")
        if inner.transfer_dtypes is not None and dtype not in inner.transfer_dtypes:
            raise ValueError(
                f"all-reduce {inner.name!r} cannot transfer {dtype.name} (it takes "
                f"{', '.join(d.name for d in inner.transfer_dtypes)})")
        self.inner, self.dtype = inner, dtype
        self.name = inner.name

    def sum_flats(self, flats, devices):
        if len(devices) == 1:
            return self.inner.sum_flats(flats, devices)
        compact = []
        for device, flat in zip(devices, flats):
            with tf.device(device), tf.name_scope("compact"):
                compact.append(tf.cast(flat, self.dtype))
        out = []
        for device, total, flat in zip(devices, self.inner.sum_flats(compact, devices), flats):
            with tf.device(device), tf.name_scope("expand"):
                out.append(tf.cast(total, flat.dtype))
        return out
