"""Packing gradients into flat vectors and back.

`pack`/`unpack`: a device's whole gradient list (one dtype) as one flat
vector: one big reduction instead of one per variable.

`plan`/`gather`/`scatter` (--gradient_repacking=N, tf_cnn_benchmarks' name;
--gradient_pack_mb=M): the gradients of each dtype cut into N packs, or into
as few packs as hold M MB each (PyTorch DDP's buckets, Horovod's fusion
buffer), of about equal bytes, in reverse variable order (the last layers'
gradients exist first in the backward pass).
A pack is a list of pieces (variable index, first element, end element); it
is built from its own gradients only, so its reduction can start as soon as
they exist, while the backward pass of the earlier layers still runs. A
variable may straddle two packs (cut like tf_cnn_benchmarks' split packs):
the sizes then differ by at most one element.
"""
import collections
import math

import tensorflow as tf

from towertrain.engine.exchange_settings import MAX_PACKS

Pack = collections.namedtuple("Pack", "dtype pieces")  # pieces: ((index, start, end), ...)


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


def plan(tensors, num_packs, pack_bytes=None):
    """The packs of a gradient list (anything with .shape and .dtype: tensors or
    variables), dtypes in name order. num_packs=0 (and no pack_bytes): one pack
    per dtype holding its variables in their order (the exchange before
    repacking). num_packs=N: per dtype, min(N, elements) packs cut from the
    reversed variable order. pack_bytes=B: as num_packs, with each dtype's
    count the fewest packs of at most B bytes (at most MAX_PACKS)."""
    by_dtype = collections.defaultdict(list)
    for index, t in enumerate(tensors):
        by_dtype[tf.as_dtype(t.dtype)].append(index)
    packs = []
    for dtype in sorted(by_dtype, key=lambda d: d.name):
        indices = by_dtype[dtype]
        sizes = {i: int(tensors[i].shape.num_elements()) for i in indices}
        wanted = (_packs_for_bytes(sum(sizes.values()) * dtype.size, pack_bytes)
                  if pack_bytes else num_packs)
        if wanted == 0:
            packs.append(Pack(dtype, tuple((i, 0, sizes[i]) for i in indices)))
            continue
        order = [i for i in reversed(indices) if sizes[i]]
        total = sum(sizes[i] for i in order)
        count = max(1, min(wanted, total))
        # Pack k covers elements [bounds[k], bounds[k + 1]) of the reversed concatenation.
        bounds = [total * k // count for k in range(count + 1)]
        offsets, at = {}, 0
        for i in order:
            offsets[i], at = at, at + sizes[i]
        for k in range(count):
            lo, hi = bounds[k], bounds[k + 1]
            pieces = tuple((i, max(lo, offsets[i]) - offsets[i],
                            min(hi, offsets[i] + sizes[i]) - offsets[i])
                           for i in order if offsets[i] < hi and offsets[i] + sizes[i] > lo)
            packs.append(Pack(dtype, pieces))
        empty = [i for i in indices if not sizes[i]]
        if empty:  # zero-element gradients go in the last pack, as empty pieces
            last = packs[-1]
            packs[-1] = Pack(dtype, last.pieces + tuple((i, 0, 0) for i in empty))
    return packs


def plan_for_exchange(tensors, exchange):
    """The packs the plan's Exchange section asks for (counted or sized)."""
    return plan(tensors, exchange.gradient_repacking, exchange.gradient_pack_bytes)


def _packs_for_bytes(total_bytes, pack_bytes):
    """How many packs of at most pack_bytes hold total_bytes (capped: the
    collective exchange numbers its instance keys by pack)."""
    return max(1, min(MAX_PACKS, math.ceil(total_bytes / pack_bytes)))


def pack_size(p):
    return sum(end - start for _, start, end in p.pieces)


def gather(tensors, p):
    """Pack `p` of a gradient list as one flat vector (on the current device)."""
    parts = []
    for index, start, end in p.pieces:
        flat = _flat(tensors[index])
        whole = start == 0 and end == tensors[index].shape.num_elements()
        parts.append(flat if whole else flat[start:end])
    return parts[0] if len(parts) == 1 else tf.concat(parts, axis=0)


def scatter(flats, packs, like):
    """The gradient list back from one flat vector per pack: like[i] gives
    gradient i's shape (a tensor of the list that was gathered)."""
    pieces = collections.defaultdict(list)
    for flat, p in zip(flats, packs):
        parts = tf.split(flat, [end - start for _, start, end in p.pieces])
        for (index, start, _), part in zip(p.pieces, parts):
            pieces[index].append((start, part))
    out = []
    for index, t in enumerate(like):
        parts = [part for _, part in sorted(pieces[index], key=lambda s: s[0])]
        flat = parts[0] if len(parts) == 1 else tf.concat(parts, axis=0)
        if t.shape.rank == 1 and t.shape.is_fully_defined():
            out.append(flat)  # already its shape: no reshape (a bias, a scale)
        else:
            out.append(tf.reshape(flat, tf.shape(t) if not t.shape.is_fully_defined()
                                  else t.shape))
    return out


def _flat(tensor):
    """`tensor` as a vector: vectors as they are (no op), others reshaped."""
    return tensor if tensor.shape.rank == 1 else tf.reshape(tensor, [-1])


def describe(variables, num_packs, pack_bytes=None, wire_dtype=None):
    """The header's line: the packs and their sizes, e.g.
    '4 packs (per dtype, reverse layer order): float32 69.1 KB, 69.1 KB, 69.1 KB, 69.1 KB'.
    wire_dtype: what a half-precision transfer (--compact_gradient_transfer)
    sends; each floating pack of another dtype is then named and sized as it
    crosses, cast to it (the plan is still cut in the gradients' own bytes)."""
    packs = plan(variables, num_packs, pack_bytes)
    wire = tf.as_dtype(wire_dtype) if wire_dtype else None
    parts, cast = [], False
    for dtype in dict.fromkeys(p.dtype for p in packs):
        sent = wire if wire is not None and dtype.is_floating and dtype != wire else dtype
        sizes = [_human(pack_size(p) * sent.size) for p in packs if p.dtype == dtype]
        origin = f" (cast from {dtype.name})" if sent != dtype else ""
        cast = cast or sent != dtype
        parts.append(f"{sent.name} {', '.join(sizes)}{origin}")
    if pack_bytes:
        measured = " before the cast" if cast else ""
        kind = f"of at most {_human(pack_bytes)}{measured}, reverse layer order"
    else:
        kind = "per dtype, reverse layer order" if num_packs else "one per dtype"
    return f"{len(packs)} pack{'s' if len(packs) != 1 else ''} ({kind}): {'; '.join(parts)}"


def _human(num_bytes):
    for unit in ("B", "KB", "MB"):
        if num_bytes < 1000 or unit == "MB":
            return f"{num_bytes:.0f} {unit}" if unit == "B" else f"{num_bytes:.1f} {unit}"
        num_bytes /= 1000
