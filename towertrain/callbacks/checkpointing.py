"""Checkpoints: save every N steps or seconds, and at the end (the restore
before the first step is the run's resume, towertrain.state.resume).

Saves happen only where the staging areas are empty (a fence, see
towertrain.engine.feed.staging), so the input position in a checkpoint is exactly the
trained step: a resumed run neither skips nor repeats a batch.
"""
import time

from towertrain.engine.distributed import peer_loss
from towertrain.errors import TrainingDivergedError
from towertrain.state import run_record

from .base import Callback


class CheckpointSaver(Callback):
    """Saves every `save_steps` steps, every `save_secs` seconds, and at the end
    (also when stopped by a signal)."""

    def __init__(self, checkpointer, save_steps=None, save_secs=None, write=print,
                 resumed=None):
        """checkpointer: the train_dir's (towertrain.state.resume.checkpointer);
        resumed: what the run's resume did (towertrain.state.resume.Resumed):
        its header lines, and the train_dir's lock, freed at close."""
        self.checkpointer = checkpointer
        self.handles = checkpointer.handles  # add_fence, drain: the input position
        self.save_steps = save_steps
        self.save_secs = save_secs
        self.write = write
        self.resumed = resumed
        self._last_save_time = None
        self._pending_step = None  # a timed save waiting for the staging to drain

    def header_info(self):
        info = [("Train dir", self.checkpointer.train_dir)]
        return info + (self.resumed.header_info() if self.resumed is not None else [])

    def _fence_after(self, step):
        if self.save_steps:
            self.handles.add_fence((step // self.save_steps + 1) * self.save_steps)

    def before_train(self, loop):
        super().before_train(loop)
        self._last_save_time = time.monotonic()
        self._fence_after(loop.start_step)

    def after_step(self, step, result, seconds):
        if self.save_steps and step % self.save_steps == 0:
            self._save()
            self._fence_after(step)
        elif self.save_secs and self._pending_step is None and (
                time.monotonic() - self._last_save_time >= self.save_secs):
            # Drain the staged batches first; save once they are trained on.
            self._pending_step = step + self.handles.drain()
        if self._pending_step is not None and step >= self._pending_step:
            self._save()

    def _save(self):
        self._pending_step = None
        self._last_save_time = time.monotonic()
        return self.checkpointer.save()

    def close(self):
        try:
            error = self.loop and self.loop.error
            if isinstance(error, TrainingDivergedError):
                self._set_aside_poisoned(self.loop.step)
            elif peer_loss.is_peer_loss(error, self.checkpointer.topology.current[1]):
                self._save_after_peer_loss(error)
        finally:
            if self.resumed is not None:
                self.resumed.release()

    def _save_after_peer_loss(self, error):
        """A peer was lost in a step: that step applied nothing here (every
        update waits for the exchange), so the variables hold the last step
        completed, whole, and the input position is that step's. The chief
        saves it, so the run goes on from there (towertrain.commands.launch,
        --min_workers), not from the last periodic checkpoint. A resume works
        the input's position out from that step, staged batches or not; only
        an input whose position is in the checkpoint (an iterator's, past the
        staged batches, which it would skip) keeps the last checkpoint."""
        if self.handles.staged_batches() and self.checkpointer.position_in_checkpoint():
            return
        try:
            path = self.checkpointer.save(last=True)
        except Exception:  # noqa: BLE001 - the last checkpoint stays; the line says so
            return
        if path:
            peer_loss.note_saved(error, self.checkpointer.last_saved_step, path)

    def _set_aside_poisoned(self, diverged_step):
        """The checkpoint of the step right before a diverged step leads straight
        back to it: the diverged step's loss and gradients come from that state
        alone (the learning rate plays no part), so a resume from it diverges
        whatever the flags. It is renamed aside, and the previous checkpoint
        becomes the latest, so the obvious fix (a lower learning rate, the same
        command) works."""
        latest = self.checkpointer.manager.latest_checkpoint
        if not latest or self.checkpointer.last_saved_step != diverged_step - 1:
            return
        aside = self.checkpointer.set_aside(latest)
        now = self.checkpointer.manager.latest_checkpoint
        self.write(f"Set aside {latest} as {aside}: the step after it diverges whatever "
                   f"the learning rate; resuming starts from "
                   f"{now or 'the initial values (no earlier checkpoint)'}")

    def after_train(self):
        path = self._save()
        step = self.checkpointer.last_saved_step
        if self.loop.stop_reason and not self.loop.stop_is_final:
            self.write(f"Received {self.loop.stop_reason}: saved checkpoint at step {step} "
                       f"to {path}")
        elif self.loop.step > self.loop.start_step:
            self.write(f"Saved checkpoint at step {step} to {path}")
        if self.loop.completed:  # an evaluator following train_dir stops after this one
                run_record.mark_final(self.checkpointer.train_dir, step, path)

