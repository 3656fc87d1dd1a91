"""Which checkpoints of a training run an evaluator beside it still has to read
(`--eval --eval_interval_secs`).

tf_cnn_benchmarks' evaluator re-reads the latest checkpoint every interval
and never stops. This one evaluates each new checkpoint once, in step order,
and ends once the run's final checkpoint is done: training marks it in its
run record (towertrain.state.run_record.mark_final) after writing it.
"""
import os
import re
import time

import tensorflow as tf

from towertrain.state import run_record

_STEP = re.compile(r"-(\d+)$")


def checkpoint_step(path):
    """The global step in a checkpoint prefix's name (ckpt-12 -> 12), or None."""
    match = _STEP.search(os.path.basename(path))
    return int(match.group(1)) if match else None


class CheckpointFollower:
    """Polls a train_dir: pending() lists checkpoints not yet evaluated, oldest
    first; done() says whether the run's final checkpoint has been evaluated."""

    def __init__(self, train_dir):
        self.train_dir = train_dir
        self.last_step = None  # the last evaluated (or skipped) step
        self.final_step = None

    def pending(self):
        """[(step, path)] newer than the last evaluated one, in step order. The
        record is read before the listing: a final mark seen here implies its
        checkpoint is listed."""
        self.final_step = run_record.final_step(run_record.read(self.train_dir))
        state = tf.train.get_checkpoint_state(self.train_dir)
        paths = list(state.all_model_checkpoint_paths) if state else []
        found = sorted((checkpoint_step(p), p) for p in paths
                       if checkpoint_step(p) is not None)
        return [(step, path) for step, path in found
                if self.last_step is None or step > self.last_step]

    def evaluated(self, step):
        self.last_step = step

    def done(self):
        return self.final_step is not None and self.last_step is not None and (
            self.last_step >= self.final_step)


def gone(path):
    """Whether checkpoint `path` was deleted (max_ckpts_to_keep) before it was read."""
    return not tf.io.gfile.exists(path + ".index")


def wait_for_record(train_dir, interval_secs, write=print, sleep=time.sleep):
    """An evaluator started before the training run: waits for the run's
    record (what it trains: the model to build), polling every interval_secs."""
    if run_record.read(train_dir):
        return
    write(f"Waiting for a training run to start in --train_dir={train_dir}")
    while not run_record.read(train_dir):
        sleep(interval_secs)


def follow(train_dir, interval_secs, evaluate, write=print, sleep=time.sleep):
    """Calls evaluate(step, path) for each new checkpoint of train_dir, in step
    order, polling every interval_secs, until the final one was evaluated.
    evaluate returns False when the checkpoint vanished before it was read.
    Returns the evaluated steps."""
    follower = CheckpointFollower(train_dir)
    steps = []
    while True:
        for step, path in follower.pending():
            if evaluate(step, path):
                steps.append(step)
            else:
                write(f"Skipped {path}: deleted by the training run before it was read "
                      "(raise its --max_ckpts_to_keep, or lower --eval_interval_secs)")
            follower.evaluated(step)
        if follower.done():
            write(f"Evaluated the final checkpoint (step {follower.final_step}) of "
                  f"--train_dir={train_dir}; done")
            return steps
        sleep(interval_secs)
