"""The group and instance keys of collective_all_reduce's collectives.

Every worker must compute the same keys for the same collective, with no
exchange: they are constants per call site, and the instance keys sit in a
key space of the model's variable layout (key_space), so trainers of
different models in one process never meet on a key whose shape TensorFlow
has already fixed. A group key's size and members are fixed for the life of
the process too, so each group shape has its own key.
"""
import zlib

from .ordering import device_type

# Group keys: every device of the cluster (one per size) / one CPU member per
# worker (scalars) / the hierarchical exchange's member per worker, by its type.
ALL_DEVICES_GROUP_BASE = 1000  # + the group size (see CollectiveManager.__init__)
WORKERS_GROUP = 2
CROSS_WORKER_GROUP = {"CPU": 3, "GPU": 4}
# scatter/xring: a group per (local device count L, local index i) of device
# i of every worker: base + L(L-1)/2 + i (a group key's size and members are
# fixed for the life of the process). On GPUs, the worker's own group of its
# L GPUs, for the reduce-scatter and the gather alike (one NCCL communicator):
# base + 1000 L + task.
SHARD_GROUP_BASE = {"CPU": 10_000, "GPU": 20_000}
LOCAL_GROUP_BASE = 10**6
# Instance keys per call site; packs add their index (gradient packs from
# 10**6 up, clear of the other sites for any --gradient_repacking; the
# gathers of scatter/xring, which share the reduce-scatters' group, from
# 1.6 * 10**6; a start-up sum through scatter/xring, "stats" or "broadcast",
# gathers at its key + 6 * 10**5). "open": the one-element collectives that open each group
# before step 1, one key per group. "apart": the extra values' own float32
# pack beside half-precision packs, + the plan's pack count. "moments":
# --sync_batch_norm's sums over the workers, + 2 x the layer's point (+ 1 for
# the gradient's). "pack_timings", "pack_pick": --gradient_pack_mb=auto's one
# decision between steps (engine/run/pack_tuning.py), each of one shape.
KEYS = {"count": 1, "stats": 200, "broadcast": 300, "open": 400,
        "pack_timings": 500, "pack_pick": 600, "apart": 10_000,
        "moments": 100_000, "grads": 10**6,
        "gather": 16 * 10**5}
# The key spaces: every key above (packs included: < 2.11 * 10**6 for up to
# 1000 packs) plus a space's base stays below 2**31 (instance keys are int32).
KEY_SPACES, KEY_SPACE_SIZE = 1000, 214 * 10**4


# This process's key spaces in use -> the variable layout that holds each.
_LAYOUT_OF_SPACE = {}


def key_space(variables, wire_dtype=None):
    """The base of the instance keys of a model with these variables: the same
    on every worker (shapes and dtypes only), another for another layout,
    and another where its packs travel in another dtype (wire_dtype: the
    --compact_gradient_transfer dtype; TensorFlow fixes an instance's dtype
    for the life of the process too).
    Two layouts whose hashes meet: the later one takes the next free space.
    Every worker then agrees because each builds its trainers in the same
    order, as their collectives already require."""
    layout = ";".join(f"{v.dtype}{tuple(v.shape)}" for v in variables)
    if wire_dtype is not None:
        layout += f";wire {tf_name(wire_dtype)}"
    space = zlib.crc32(layout.encode()) % KEY_SPACES
    for _ in range(KEY_SPACES):
        if _LAYOUT_OF_SPACE.setdefault(space, layout) == layout:
            return space * KEY_SPACE_SIZE
        space = (space + 1) % KEY_SPACES
    raise ValueError(f"collective_all_reduce: {KEY_SPACES} different models in one process "
                     "use up the collective key spaces; run fewer models per process")


def tf_name(dtype):
    return getattr(dtype, "name", str(dtype))


def shard_group(device, num_devices, index):
    """The group key of local device `index`'s shards across workers."""
    return (SHARD_GROUP_BASE[device_type(device)] + num_devices * (num_devices - 1) // 2
            + index)
