"""The exchange's common path: gradients cut into packs, each pack summed on
its own by the mode's algorithm, checked on every device, and cut back into
gradients.

Extra values are short float32 vectors sent with the gradients: they travel
inside a pack instead of in a collective of their own. The batch-norm
statistics travel in the first pack (as global tower 0's values, zeros
elsewhere), the step's scalars (loss, example count, stop requests) in the
last float32 pack. Every device then holds the same
summed bits of everything the update decides on, so each device decides from
its own copy whether to apply: no value is gathered to one place first.

The check is per pack, not per variable: one IsFinite and one All per pack per
device. A sum holds a NaN or an infinity of any of its terms (and an overflow
of finite ones), so a pack's sum is finite only if every device's share was.
"""
import collections

import tensorflow as tf

from . import packing

# Where extra values go: the first pack, or the last float32 one.
FIRST, LAST = "first", "last"


class Exchanged(collections.namedtuple(
        "Exchanged", "flats packs like finite extra_values", defaults=(None, None))):
    """The exchange's result: flats[d][k], pack k's sum on device d (packs:
    the plan; like[d]: device d's gradient list, for shapes); finite[d],
    whether device d's sums are all finite (a boolean on device d), or None
    where nothing was checked; extra_values[name][d], that extra value's
    summed vector on device d."""

    def gradients(self, d):
        """Device d's summed gradient list, cut from its packs where this is
        called: inside an update's branch, the branch takes the few packs
        instead of a tensor per variable."""
        return packing.scatter(self.flats[d], self.packs, self.like[d])

    @property
    def per_device(self):
        """Every device's summed gradient list (each cut on its device)."""
        out = []
        for d, flat in enumerate(self.flats):
            with tf.device(flat[0].device if flat else None):
                out.append(self.gradients(d))
        return out


def exchange_packs(per_device, devices, packs, sum_pack, extra_values=None, check=True,
                   extra_values_apart=False):
    """Sums `per_device` (one gradient list per device) pack by pack.

    sum_pack(k, flats) -> the per-device sums of pack k's flats.
    extra_values: {name: (FIRST or LAST, [a float32 vector per device])}; one
    whose pack is not float32, and every one where extra_values_apart (a pack
    transferred in half precision), travels in a float32 pack of its own at
    the end (summed by sum_pack with the next index, len(packs)).
    """
    extra_values = dict(extra_values or {})
    float_packs = [k for k, p in enumerate(packs) if p.dtype == tf.float32]
    placed = collections.defaultdict(list)  # pack index -> extra values' names, in order
    extra = []
    for name, (where, _) in extra_values.items():
        if not float_packs or extra_values_apart:
            extra.append(name)
        else:
            placed[float_packs[0] if where == FIRST else float_packs[-1]].append(name)
    summed = [[] for _ in devices]
    finite = [[] for _ in devices]
    extra_sums = {name: [None] * len(devices) for name in extra_values}

    def run(k, make_flat, names, size):
        flats = []
        for d, device in enumerate(devices):
            with tf.device(device):
                parts = [make_flat(d)] if make_flat else []
                parts += [extra_values[name][1][d] for name in names]
                flats.append(parts[0] if len(parts) == 1 else tf.concat(parts, 0))
        sums = sum_pack(k, flats)
        for d, device in enumerate(devices):
            with tf.device(device):
                if check:
                    finite[d].append(tf.reduce_all(tf.math.is_finite(sums[d])))
                at = size
                for name in names:
                    width = int(extra_values[name][1][d].shape[0])
                    extra_sums[name][d] = sums[d][at:at + width]
                    at += width
                if make_flat:
                    summed[d].append(sums[d][:size] if names else sums[d])

    for k, p in enumerate(packs):
        with tf.name_scope(f"pack{k}"):
            run(k, lambda d, p=p: packing.gather(per_device[d], p), placed.get(k, []),
                packing.pack_size(p))
    if extra:
        with tf.name_scope("extra_values"):
            run(len(packs), None, extra, 0)
    verdicts = None
    if check:
        verdicts = []
        for device, flags in zip(devices, finite):
            with tf.device(device):
                verdicts.append(flags[0] if len(flags) == 1 else tf.reduce_all(tf.stack(flags)))
    return Exchanged(summed, packs, list(per_device), verdicts, extra_sums or None)
