"""Chunked ring all-reduce built from plain TF ops on the devices themselves.

Each device's pack (one flat vector) is cut into N chunks.
Reduce-scatter: chunk c starts on device c and travels the ring, each device
adding its own piece, so after N-1 hops one device holds chunk c's full sum.
All-gather: that sum travels N-1 more hops by copy. Every device ends with the
same bits, and each hop moves 1/N of the data.
"""
import tensorflow as tf

from .base import AllReduce, register


def _chunk_sizes(total, n):
    base, extra = divmod(total, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


@register("ring")
class RingAllReduce(AllReduce):
    def sum_flats(self, flats, devices):
        n = len(devices)
        if n == 1:
            return [flats[0]]
        chunks = []
        for device, flat in zip(devices, flats):
            with tf.device(device):
                chunks.append(tf.split(flat, _chunk_sizes(flat.shape[0], n), num=n))

        # Reduce-scatter: after hop s, chunk c's partial sum sits on (c + s) % n.
        partial = [chunks[c][c] for c in range(n)]
        for hop in range(1, n):
            for c in range(n):
                holder = (c + hop) % n
                with tf.device(devices[holder]):
                    partial[c] = partial[c] + chunks[holder][c]

        # All-gather: chunk c's sum starts on (c + n - 1) % n and is copied on.
        gathered = [[None] * n for _ in range(n)]
        for c in range(n):
            owner = (c + n - 1) % n
            gathered[owner][c] = partial[c]
            for hop in range(1, n):
                holder = (owner + hop) % n
                with tf.device(devices[holder]):
                    gathered[holder][c] = tf.identity(gathered[(holder - 1) % n][c])

        out = []
        for device, pieces in zip(devices, gathered):
            with tf.device(device):
                out.append(tf.concat(pieces, axis=0))
        return out
