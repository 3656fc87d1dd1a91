"""The built-in callbacks made from a Trainer by hand, as Trainer.train makes
them: from its plan (the run's facts) and its RunHandles, never the Trainer."""
from towertrain import callbacks
from towertrain.state import resume
from towertrain.state.resume.checkpointer import Checkpointer


def checkpointer_for(trainer, train_dir, max_to_keep=5):
    """A Checkpointer of `trainer`'s state in train_dir."""
    return Checkpointer(trainer._run_handles(), trainer.plan, train_dir, max_to_keep)


def default_callbacks_for(trainer, write=print, eval_data=None):
    """The callbacks trainer.train() would run, after its resume (a --train_dir's
    restore included)."""
    handles = trainer._run_handles(eval_data)
    resumed = resume.resume(trainer.plan, handles, write)
    return callbacks.default_callbacks(trainer.plan, handles, resumed, write)
