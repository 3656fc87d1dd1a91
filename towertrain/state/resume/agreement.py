"""Multi-worker: every worker resumes from the same checkpoint, or none trains.

Each worker restores the latest checkpoint of its own --train_dir. Given one
shared folder they all read the chief's; given different folders (or a
worker without the flag) the chief resumed at step 20 while a worker started
from its initial values and the first batch again: a run that trained on as
another one. So, after the restore and before any step, the workers exchange
what they restored (one collective of a few numbers over one CPU member per
worker) and every one of them compares: whether it has a --train_dir, the
checkpoint's step and a checksum of its index file (which holds the checksum
of every saved tensor, so a copy of another run's ckpt-20 differs too). Any
difference stops every worker with the same one line, before any step.
"""
import os
import zlib

import numpy as np
import tensorflow as tf

from towertrain import private_api
from towertrain.engine.exchange.keys import KEY_SPACE_SIZE, KEY_SPACES, WORKERS_GROUP
from towertrain.errors import CheckpointError

# Above every model's key space (exchange.keys: spaces x size = 2.14e9), so
# no step's collective can meet it; instance keys are int32 (< 2**31).
INSTANCE_KEY = KEY_SPACES * KEY_SPACE_SIZE + 1000
_FIELDS = 3  # has a --train_dir, the checkpoint's step (-1: none), its checksum


def fingerprint(train_dir, path):
    """This worker's [has --train_dir, step of `path` (-1: none), checksum]."""
    if not path:
        return [1.0 if train_dir else 0.0, -1.0, 0.0]
    step = int(path.rsplit("-", 1)[1])
    with open(path + ".index", "rb") as f:
        checksum = zlib.crc32(f.read())
    return [1.0, float(step), float(checksum)]


def describe(row, checksums_differ):
    has_dir, step, checksum = row
    if not has_dir:
        return "no --train_dir"
    if step < 0:
        return "no checkpoint in its --train_dir"
    text = f"ckpt-{int(step)}"
    return f"{text} (index checksum {int(checksum):08x})" if checksums_differ else text


def check_rows(rows, train_dir):
    """Raises CheckpointError unless every worker's row (fingerprint) is the same."""
    rows = [tuple(row) for row in rows]
    if len(set(rows)) == 1:
        return
    same_steps = len({row[:2] for row in rows}) == 1
    found = "; ".join(f"task {task}: {describe(row, same_steps)}"
                      for task, row in enumerate(rows))
    raise CheckpointError(
        f"--train_dir={train_dir}: the workers would resume from different checkpoints "
        f"({found}); give every worker the same --train_dir, one folder they all reach "
        "(a shared file system), so they all resume from the chief's checkpoint "
        "(nothing was trained)")


def agree(cluster, train_dir, path, timeout):
    """Every worker of `cluster` calls this once, after its restore of `path`
    (None: nothing restored), before its first step; raises CheckpointError on
    every worker unless all restored the same checkpoint."""
    if cluster.num_workers == 1:
        return
    mine = np.zeros(_FIELDS * cluster.num_workers)
    start = _FIELDS * cluster.task_index
    mine[start:start + _FIELDS] = fingerprint(train_dir, path)
    with tf.device("/cpu:0"):
        # Each worker fills its own slots, so the sum is every worker's row.
        summed = private_api.collective_all_reduce(
            tf.constant(mine, tf.float64), cluster.num_workers, WORKERS_GROUP, INSTANCE_KEY,
            timeout=timeout, communication_hint="ring")
    check_rows(summed.numpy().reshape(cluster.num_workers, _FIELDS).tolist(),
               os.path.normpath(train_dir) if train_dir else None)
