"""Every error a run can stop with, in one place.

The command lines print their message as one line `towertrain: error: ...` and
exit 2 (a dead peer in a multi-worker run exits 1). A message names the culprit
(the flag, file, checkpoint, layer or worker) and what to do. This module
imports nothing, so every wing, models/ and input_pipeline/ included, can use it.
"""


class ParamsError(ValueError):
    """A bad flag value or combination; the message names the flag."""


class ModelError(ParamsError):
    """The model or the input does not fit; the message says what and how to fix it."""


class InputError(ParamsError):
    """Bad input data; the message names the file or directory at fault."""


class ClusterError(ParamsError):
    """A bad cluster description; the message names the flag or TF_CONFIG."""


class DeviceError(RuntimeError):
    """The requested devices cannot be had in this process."""


class OutOfMemoryError(RuntimeError):
    """A step did not fit in the devices' memory; the message names the batch,
    the device and what to try."""


class CheckpointError(RuntimeError):
    """A checkpoint cannot be written, found, read or matched to the model."""


class TrainerStateError(RuntimeError):
    """A Trainer asked for what its state rules out: step() after close(), train()
    with every planned step trained; the message says what to do instead."""


class TowerMismatchError(RuntimeError):
    """Towers reached different numbers of cross-tower points."""


class NoEvalSplitError(LookupError):
    """The input has no eval split; the message says what is missing."""


class TrainingDivergedError(RuntimeError):
    """A loss or gradient became NaN or Inf; nothing from that step was applied
    and no non-finite state was saved."""
