"""The facts of this machine a run plan needs: how many GPUs TensorFlow sees
and how many cores this process may use.

The one place the GPU list is read (towertrain.engine.process.devices and the
plan ask here). Probing imports TensorFlow, so it is deferred to the first
call and kept for the process: listing physical devices does not start
TensorFlow's runtime, and the list cannot change while the process lives.
Tests and tracing pass a Machine of their own instead.
"""
import dataclasses
import functools
import os


@dataclasses.dataclass(frozen=True)
class Machine:
    gpus: int = 0  # physical GPUs TensorFlow can use
    cores: int = 1  # cores this process may run on

    @property
    def default_device(self) -> str:
        """What an unset --device means here."""
        return "gpu" if self.gpus else "cpu"


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@functools.lru_cache(maxsize=None)
def physical_gpus():
    """TensorFlow's physical GPU list (tuple), read once per process."""
    import tensorflow as tf  # deferred: config imports no TensorFlow
    return tuple(tf.config.list_physical_devices("GPU"))


def probe() -> Machine:
    """This machine's facts (the GPU list read once per process)."""
    return Machine(gpus=len(physical_gpus()), cores=available_cores())
