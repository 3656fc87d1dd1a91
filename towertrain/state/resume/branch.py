"""A resume from an earlier checkpoint never overwrites a later one.

`--checkpoint=DIR/ckpt-16` with `--train_dir=DIR` holding ckpt-20 .. ckpt-32
would train a new branch from step 16 and save it as ckpt-20 .. ckpt-32 over
the old run's files (and the old record's final step), so the later ones
would be lost without a word. Refused before anything is restored or
written: a branch goes to a new folder. A later checkpoint that is damaged
(the resume offers the earlier one: towertrain.state.checkpoint.check_whole)
does not count: the new saves replace it, as that offer says.
"""
import os

from towertrain.errors import CheckpointError
from towertrain.state import checkpoint as ckpt_lib
from towertrain.state import run_record


def _step(path):
    name = os.path.basename(path)
    return int(name.rsplit("-", 1)[1]) if name.startswith("ckpt-") else None


def _names(paths):
    names = [os.path.basename(p) for p in paths]
    return ", ".join(names) if len(names) <= 4 else f"{names[0]} .. {names[-1]} ({len(names)})"


def check_no_later_checkpoints(chosen, train_dir):
    """Raises CheckpointError when train_dir holds checkpoints of a later step
    than `chosen` (the --checkpoint a run resumes from), which its saves
    would overwrite."""
    step = _step(chosen)
    if step is None:
        return
    later = [p for p in ckpt_lib.checkpoints_on_disk(train_dir)
             if _step(p) > step and not ckpt_lib.damaged(p)]
    if not later:
        return
    raise CheckpointError(
        f"--checkpoint={chosen}: --train_dir={train_dir} holds later checkpoints "
        f"({_names(later)}), which this run's saves would overwrite; to branch from "
        f"step {step} and keep them, copy {os.path.basename(chosen)}.* and "
        f"{run_record.RUN_INFO_FILE} into a new folder and give that as --train_dir, or delete "
        "the later checkpoints to discard them (nothing was changed)")
