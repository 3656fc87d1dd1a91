"""A lost peer, read as one event: what a surviving worker of a multi-worker
run does when a collective fails because another worker died or stopped
answering (towertrain.engine.distributed.peer_watch aborts the collectives).

The chief saves the step it last completed (towertrain.callbacks.checkpointing:
its variables are whole, the failed step applied nothing), each survivor
prints one line (which peer, at which step, what happens next) and exits
with EXIT_STATUS, which tells a launcher "stopped because a peer was lost",
not "failed" (towertrain.commands.launch goes on with the survivors under
--min_workers). TensorFlow's own logs of the abort go to the worker's log
file (towertrain.commands.worker_log), not to the terminal.

Imports no TensorFlow at module level: the launcher reads EXIT_STATUS.
"""

# EX_TEMPFAIL of sysexits.h: "a temporary failure; the user is invited to retry".
EXIT_STATUS = 75
# How long a survivor stays after its line (its server still answering), so
# the other survivors' health checks name only the peer that was lost: on a
# loaded machine one can say its line seconds after another. The local
# launcher ends the wait once every survivor has said its line.
LINGER_SECS = 10.0
# How a survivor's line ends (next_words): the launcher reads from it that the
# worker only waits for the others now.
EXIT_WORDS = f"this worker exits (status {EXIT_STATUS}:"

_SAVED = "_towertrain_saved_after_peer_loss"


def error_types():
    """The TensorFlow errors a lost peer raises in a step or a collective."""
    import tensorflow as tf  # deferred: the launcher imports this module
    return (tf.errors.DeadlineExceededError, tf.errors.UnavailableError,
            tf.errors.CancelledError, tf.errors.AbortedError, tf.errors.InternalError)


def is_peer_loss(err, num_workers):
    """Whether `err`, which stopped a run of `num_workers` workers, is a lost peer."""
    return num_workers > 1 and err is not None and isinstance(err, error_types())


def note_saved(err, step, path):
    """Marks the error of a lost peer with the checkpoint the chief saved for it."""
    setattr(err, _SAVED, (int(step), path))


def saved(err):
    """(step, path) the chief saved after the lost peer `err`, or None."""
    return getattr(err, _SAVED, None)


def next_words(err, is_chief, train_dir, log_path=None):
    """What happens next, for the survivor's one line."""
    done = saved(err)
    if done is not None:
        kept = f"saved step {done[0]} to {done[1]}"
    elif not train_dir:
        kept = "no --train_dir: nothing saved"
    elif is_chief:
        kept = f"--train_dir={train_dir} keeps its last checkpoint"
    else:
        kept = "the chief saves its last step"
    log = f"; TensorFlow's log: {log_path}" if log_path else ""
    return (f"{kept}; {EXIT_WORDS} a launcher with --min_workers goes on with the "
            f"workers left){log}")
