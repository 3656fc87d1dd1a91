"""A train_dir's checkpoints: the one state a resume restores and the saver
(towertrain.callbacks.checkpointing) writes, through one tf.train.Checkpoint
and its CheckpointManager.

Saves happen only where the staging areas are empty (a fence, see
towertrain.engine.feed.staging), so the input position in a checkpoint is exactly the
trained step: a resumed run neither skips nor repeats a batch. A state with
any non-finite value is never written.
"""
import os
import shutil

import numpy as np
import tensorflow as tf

from towertrain.errors import TrainingDivergedError
from towertrain.state import checkpoint as ckpt_lib

from . import leftovers
from . import topology as topology_lib

# Beyond the tensors: the index file, the `checkpoint` state file and the run
# record, each at least a file-system block.
FILE_OVERHEAD_BYTES = 16 * 1024
# And per saved tensor: its index entry and its node of the object graph the
# data file holds. Measured (TF 2.21, resnet20): 230 bytes per tensor with
# momentum (166 tensors: 38 KB beyond the tensors' bytes), 226 with adam.
# Twice that leaves room for longer layer names.
PER_TENSOR_BYTES = 512


class Checkpointer:
    """Saves and restores one run's state in train_dir.

    handles: the run's RunHandles (model, variables, input, engine_variables,
    staged_batches, learning_rate); plan: its RunPlan (the global batch and
    the cluster's shape, recorded with every checkpoint)."""

    def __init__(self, handles, plan, train_dir, max_to_keep=5, writer=True):
        """writer: this process saves (the chief); it rewrites a lost
        `checkpoint` state file before the manager reads it."""
        ckpt_lib.ensure_writable(train_dir)
        # The ckpt-N files a lost state file listed (rewritten from them), or [].
        self.rebuilt = leftovers.rebuild_state_file(train_dir) if writer else []
        self.handles = handles
        self.train_dir = train_dir
        self.max_to_keep = max_to_keep
        self.topology = topology_lib.RecordedTopology(  # who wrote a restored checkpoint
            plan.batches.per_update, plan.topology.num_workers, plan.topology.num_towers)
        self.state = ckpt_lib.EngineState(handles.model, handles.variables, handles.input,
                                          dict(handles.engine_variables(),
                                               **self.topology.variables()))
        self._checkpoint = self.state.checkpoint()
        self.manager = tf.train.CheckpointManager(self._checkpoint, train_dir,
                                                  max_to_keep=max_to_keep)
        self.last_saved_step = None

    def restore_latest(self, checkpoint_path=None):
        """Restores the given or latest checkpoint; returns its path, or None if none."""
        # A reader (a non-chief worker) may look before the chief rewrote a
        # lost state file: it takes the same latest ckpt-N from the disk.
        path = checkpoint_path or self.manager.latest_checkpoint or ckpt_lib.latest(
            self.train_dir)
        if not path:
            return None
        ckpt_lib.restore(self._checkpoint, path, self.state.variables)
        self.state.sync_copies()
        self.topology.after_restore()
        self.last_saved_step = self.state.global_step()
        return path

    def position_in_checkpoint(self):
        """Whether checkpoints hold the input's position (an iterator's state);
        else a resume works it out from the step (Input.resume_after)."""
        return self.state.input is not None

    def save(self, last=False):
        """Writes a checkpoint of the current step (once per step); returns its path.
        last: the process trains no more (a lost peer), so batches still staged
        are never trained here; a resume that works the input's position out
        from the step reads them again, so only a position in the checkpoint
        forbids it."""
        step = self.state.global_step()
        if step == self.last_saved_step:
            return self.manager.latest_checkpoint
        if self.handles.staged_batches() and not (last and not self.position_in_checkpoint()):
            raise RuntimeError(f"checkpoint at step {step} with batches still staged: the "
                               "saved input position would skip them")
        bad = self.non_finite_variables()
        if bad:
            raise TrainingDivergedError(
                f"not saving step {step}: {len(bad)} variable(s) are not finite "
                f"({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''}); the last good "
                f"checkpoint stays {self.manager.latest_checkpoint}; try a lower "
                f"--init_learning_rate (now {self.handles.learning_rate.initial_value:g})")
        try:
            path = self.manager.save(checkpoint_number=step)
        except (tf.errors.OpError, OSError) as err:  # a full disk: ResourceExhaustedError
            self._remove_partial(os.path.join(self.train_dir, f"ckpt-{step}"))
            raise ckpt_lib.save_failed(step, self.train_dir, err,
                                       self.manager.latest_checkpoint) from err
        self.last_saved_step = step
        return path

    @staticmethod
    def _remove_partial(prefix):
        """Removes what a failed save of `prefix` left: TensorFlow's `<prefix>_temp/`
        and any of the prefix's own files (a failure while they were merged)."""
        if tf.io.gfile.exists(prefix + "_temp"):
            tf.io.gfile.rmtree(prefix + "_temp")
        for file in tf.io.gfile.glob(prefix + ".*"):
            tf.io.gfile.remove(file)

    def bytes_needed(self):
        """About the bytes one checkpoint of this run takes on disk: its tensors
        (optimizer slots and the step included), each one's index entry and
        object-graph node, plus room for the state file and the run record."""
        tensors = list(self.state.variables.values()) + list(self.state.engine.values())
        tensors += [slot for slots in self.state.slots.values() for slot in slots.values()]
        tensors.append(self.state.step)
        data = sum(v.shape.num_elements() * tf.as_dtype(v.dtype).size for v in tensors)
        return data + PER_TENSOR_BYTES * len(tensors) + FILE_OVERHEAD_BYTES

    def check_free_space(self):
        """Refuses a train_dir whose disk cannot hold one more checkpoint, before
        the first step (a full disk at the end would lose the whole run)."""
        ckpt_lib.check_free_space(self.train_dir, self.bytes_needed(),
                                  shutil.disk_usage(self.train_dir).free)

    def set_aside(self, path):
        """Renames checkpoint `path` to 'diverged-<name>' (kept for inspection) and
        makes the previous checkpoint the latest; returns the new prefix."""
        directory, name = os.path.split(path)
        aside = os.path.join(directory, f"diverged-{name}")
        for file in tf.io.gfile.glob(path + ".*"):
            tf.io.gfile.rename(file, aside + file[len(path):], overwrite=True)
        # The state file is written again from the checkpoints left on disk
        # (relative names, so a moved train_dir resumes from its own files;
        # with their times, so max_to_keep goes on deleting the oldest), or
        # none is left: a resume starts from the initial values.
        state_file = os.path.join(directory, ckpt_lib.STATE_FILE)
        if tf.io.gfile.exists(state_file):
            tf.io.gfile.remove(state_file)
        leftovers.rebuild_state_file(directory)
        # The manager keeps its own list: rebuild it from the state just written.
        self.manager = tf.train.CheckpointManager(self._checkpoint, self.train_dir,
                                                  max_to_keep=self.max_to_keep)
        self.last_saved_step = None
        return aside

    def non_finite_variables(self):
        """Keys of saved values (variables and slots) holding NaN or Inf."""
        named = dict(self.state.variables)
        for key, slots in self.state.slots.items():
            named.update({f"{key}/{name}": slot for name, slot in slots.items()})
        return sorted(key for key, variable in named.items()
                      if tf.as_dtype(variable.dtype).is_floating
                      and not np.all(np.isfinite(variable.numpy())))
