"""Callbacks of the training loop: one concern each (see towertrain.loop).

Write your own by subclassing `Callback` and pass it as
`Trainer.train(callbacks=[...])`.
"""
from .base import Callback
from .checkpointing import Checkpointer, CheckpointSaver, run_record_of
from .divergence import DivergenceGuard
from .periodic_eval import PeriodicEval
from .signals import StopOnSignal
from .step_printer import StepPrinter

__all__ = ["Callback", "CheckpointSaver", "Checkpointer", "DivergenceGuard", "PeriodicEval",
           "StepPrinter", "StopOnSignal", "default_callbacks"]


def default_callbacks(trainer, write=print, eval_data=None):
    """The callbacks the CLI runs, from the trainer's Params. With --train_dir this
    restores the latest checkpoint (so the loop starts at its step) and only then
    records the run, so a failed resume leaves the train_dir's record as it was."""
    from towertrain import checkpoint as ckpt_lib, evaluation, run_record
    p = trainer.params
    cluster = getattr(trainer, "cluster", None)
    if cluster is not None and not cluster.is_chief:
        return _worker_callbacks(trainer, write)  # multi-worker: the chief writes
    dynamic = bool(trainer.loss_scale and trainer.loss_scale.dynamic)
    callbacks = [DivergenceGuard(trainer.learning_rate, dynamic_loss_scale=dynamic),
                 StepPrinter(p.display_every, trainer.num_warmup_batches, write)]
    if p.eval_during_training_every_n_steps:
        data = eval_data or evaluation.eval_data_for(trainer)
        callbacks.append(PeriodicEval(trainer, p.eval_during_training_every_n_steps, data,
                                      write))
    saver = None
    if p.train_dir:
        saver = CheckpointSaver(Checkpointer(trainer, p.train_dir, p.max_ckpts_to_keep),
                                p.save_model_steps, p.save_model_secs, write)
        # Another model's run: say so, instead of listing every missing variable.
        run_record.check(run_record.read(p.train_dir), p, f"--train_dir={p.train_dir}")
        saver.restore()
        ckpt_lib.write_run_info(p.train_dir, run_record_of(trainer))
        callbacks.append(saver)
    callbacks.append(StopOnSignal(saves_on_stop=saver is not None, write=write))
    return callbacks


def _worker_callbacks(trainer, write):
    """A non-chief worker of a multi-worker run: resumes from the chief's latest
    checkpoint in the shared --train_dir, never saves and prints one line."""
    p = trainer.params
    write(f"{trainer.cluster.describe(trainer.cluster.task_index)}: training; the chief "
          "(task 0) writes the output and checkpoints")
    if p.train_dir:
        path = Checkpointer(trainer, p.train_dir, p.max_ckpts_to_keep).restore_latest()
        if path:
            write(f"resumed from the chief's checkpoint {path}")
    return [DivergenceGuard(trainer.learning_rate),
            StepPrinter(p.display_every, trainer.num_warmup_batches, lambda *_: None),
            StopOnSignal(saves_on_stop=False, write=write)]
