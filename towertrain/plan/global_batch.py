"""--global_batch_size=G: the examples of one update held fixed, and the
per-device batch and accumulation steps worked out for the topology.

    split = global_batch.split(64, per_device=None, accumulation=1, workers=4, towers=1)
    split.per_device, split.accumulation      # 16, 1
    global_batch.split(64, per_device=8, accumulation=1, workers=4, towers=1)
                                              # 8, 2: --batch_size is what a device holds

Without --global_batch_size the global batch follows from the others (per
device x devices x workers x accumulation steps), as before. With it, a run
that moves to another number of workers or devices (by hand, or an elastic
launch) trains on the same examples per update: with the same per-device
batch and accumulation steps the topology change is exact
(docs/checkpoints.md, "Randomness and exactness"). Pure Python.
"""
import dataclasses
from typing import Optional

from towertrain.errors import ParamsError


@dataclasses.dataclass(frozen=True)
class Split:
    """How a global batch is cut: per device, per update's micro-batches, and
    from which setting (None: no --global_batch_size; the others give it)."""
    per_device: int
    accumulation: int
    global_batch_size: Optional[int] = None


def _where(workers, towers):
    return (f"{workers} worker{'s' * (workers > 1)} x {towers} "
            f"device{'s' * (towers > 1)}")


def split(global_batch_size, per_device, accumulation, workers, towers, default_per_device):
    """The Split of a run. global_batch_size: --global_batch_size (None: not
    given; the batch is per_device or default_per_device, as before);
    per_device: --batch_size (None: not given); accumulation:
    --gradient_accumulation_steps (1 when not given). Raises ParamsError when
    the topology cannot carry the global batch."""
    if global_batch_size is None:
        return Split(per_device or default_per_device, accumulation)
    devices = workers * towers
    where = _where(workers, towers)
    if per_device is not None:  # the devices' batch is fixed: accumulate the rest
        whole, left = divmod(global_batch_size, devices * per_device)
        if left or not whole:
            raise ParamsError(
                f"--global_batch_size={global_batch_size}: not a multiple of --batch_size="
                f"{per_device} x {where} ({devices * per_device}), so no number of "
                "accumulation steps makes it; use a global batch that is a multiple of "
                f"{devices * per_device}, or another --batch_size")
        return Split(per_device, whole, global_batch_size)
    per_device, left = divmod(global_batch_size, devices * accumulation)
    if left or not per_device:
        accumulated = (f" x {accumulation} accumulation steps" if accumulation > 1 else "")
        raise ParamsError(
            f"--global_batch_size={global_batch_size}: does not divide over {where}"
            f"{accumulated} ({devices * accumulation}); use a global batch that is a "
            f"multiple of {devices * accumulation}, or give --batch_size to accumulate "
            "the rest")
    return Split(per_device, accumulation, global_batch_size)
