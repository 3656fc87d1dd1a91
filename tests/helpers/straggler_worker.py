"""A towertrain worker with delay hooks, for the straggler report's tests
(`python -m towertrain.launch --module=helpers.straggler_worker -- <flags>`).

Task $STRAGGLER_TASK sleeps $STRAGGLER_SECONDS in each step function call of
the ranges $STRAGGLER_PHASES names ("input:101:200,compute:201:300", the
calls counted from 1): in its input (the batches arrive late, before the
step's input-ready time) or in its towers (after the input is ready, before
the gradients exist). Without $STRAGGLER_TASK it is the plain command line."""
import os
import sys
import time

import tensorflow as tf

from towertrain.commands import train
from towertrain.engine.step import towers
from towertrain.input_pipeline import synthetic


def _task():
    given = [a for a in sys.argv if a.startswith("--task_index=")]
    return int(given[0].split("=")[1]) if given else 0


def _delayed(tensors, first, last):
    """`tensors` once a sleep has run (in calls first..last)."""
    seconds = float(os.environ["STRAGGLER_SECONDS"])
    calls = {"n": 0}

    def sleep():
        calls["n"] += 1
        if first <= calls["n"] <= last:
            time.sleep(seconds)
        return 0

    with tf.device("/cpu:0"):
        done = tf.py_function(sleep, [], tf.int32)
    with tf.control_dependencies([done]):
        return [tf.identity(t) for t in tensors]


def _hook(kind, first, last):
    if kind == "input":
        original_batches = synthetic.SyntheticInput.tower_batches

        def tower_batches(self, devices):
            batches = original_batches(self, devices)
            images = _delayed([images for images, _ in batches], first, last)
            return [(image, labels) for image, (_, labels) in zip(images, batches)]
        synthetic.SyntheticInput.tower_batches = tower_batches
    else:
        original_compute = towers.Towers.compute

        def compute(self, batches, *args, **kwargs):
            images = _delayed([images for images, _ in batches], first, last)
            return original_compute(self, [(image, labels) for image, (_, labels)
                                           in zip(images, batches)], *args, **kwargs)
        towers.Towers.compute = compute


if __name__ == "__main__":
    if os.environ.get("STRAGGLER_TASK") and int(os.environ["STRAGGLER_TASK"]) == _task():
        for phase in os.environ["STRAGGLER_PHASES"].split(","):
            kind, first, last = phase.split(":")
            _hook(kind, int(first), int(last))
    train.run()
