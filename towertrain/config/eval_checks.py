"""Checks of the evaluation flags (eval during training, how much to evaluate,
following a training run, early stop) and of the reported loss, kept apart
from params.py so each file stays small. Meanings are tf_cnn_benchmarks'."""

# The --eval_during_training_* flags: at most one may be given.
EVAL_DURING_TRAINING = ("eval_during_training_every_n_steps",
                        "eval_during_training_every_n_epochs",
                        "eval_during_training_at_specified_steps",
                        "eval_during_training_at_specified_epochs")


def parse_steps(text):
    """'S1,S2,...' -> sorted tuple of distinct global steps >= 1."""
    try:
        steps = {int(part) for part in text.split(",")}
    except ValueError:
        raise ValueError("must be comma-separated whole step numbers, e.g. 100,200") from None
    if min(steps) < 1:
        raise ValueError("steps must be >= 1")
    return tuple(sorted(steps))


def parse_epochs(text):
    """'E1,E2,...' -> sorted tuple of distinct epochs > 0 (fractions allowed)."""
    try:
        epochs = {float(part) for part in text.split(",")}
    except ValueError:
        raise ValueError("must be comma-separated epoch numbers, e.g. 1,2.5") from None
    if not min(epochs) > 0:
        raise ValueError("epochs must be > 0")
    return tuple(sorted(epochs))


def eval_during_training(p):
    """The --eval_during_training_* flag given, or None."""
    return next((flag for flag in EVAL_DURING_TRAINING if getattr(p, flag)), None)


def validate_eval(p, fail):
    """fail(flag, value, message) raises ParamsError."""
    given = [flag for flag in EVAL_DURING_TRAINING if getattr(p, flag) is not None]
    if len(given) > 1:
        fail(given[1], getattr(p, given[1]), f"conflicts with --{given[0]}; give at most "
             "one --eval_during_training_* flag")
    if p.eval_during_training_every_n_epochs is not None and not (
            p.eval_during_training_every_n_epochs > 0):
        fail("eval_during_training_every_n_epochs", p.eval_during_training_every_n_epochs,
             "must be > 0")
    for flag, parse in (("eval_during_training_at_specified_steps", parse_steps),
                        ("eval_during_training_at_specified_epochs", parse_epochs)):
        if getattr(p, flag) is not None:
            try:
                parse(getattr(p, flag))
            except ValueError as err:
                fail(flag, getattr(p, flag), str(err))
    if p.stop_at_top_1_accuracy is not None:
        if not 0 < p.stop_at_top_1_accuracy <= 1:
            fail("stop_at_top_1_accuracy", p.stop_at_top_1_accuracy, "must be in (0, 1]")
        if not given:
            fail("stop_at_top_1_accuracy", p.stop_at_top_1_accuracy, "needs one of the "
                 "--eval_during_training_* flags (it stops on their results)")
    if p.num_eval_batches is not None and p.num_eval_batches < 1:
        fail("num_eval_batches", p.num_eval_batches, "must be >= 1")
    if p.num_eval_epochs is not None and not p.num_eval_epochs > 0:
        fail("num_eval_epochs", p.num_eval_epochs, "must be > 0")
    if p.num_eval_batches is not None and p.num_eval_epochs is not None:
        fail("num_eval_batches", p.num_eval_batches, "conflicts with --num_eval_epochs="
             f"{p.num_eval_epochs}; drop one")
    if not p.eval_interval_secs >= 0:
        fail("eval_interval_secs", p.eval_interval_secs, "must be >= 0 (0: evaluate once)")
    if p.eval_interval_secs and not p.eval:
        fail("eval_interval_secs", p.eval_interval_secs, "only applies with --eval (an "
             "evaluator following --train_dir)")
    if p.eval_interval_secs and p.checkpoint:
        fail("eval_interval_secs", p.eval_interval_secs, f"follows --train_dir's new "
             f"checkpoints; with --checkpoint={p.checkpoint} drop one")
    if p.eval_dir is not None and not p.eval:
        fail("eval_dir", p.eval_dir, "only applies with --eval; eval during training "
             "writes under --summary_dir (or --train_dir)/eval with --summary_verbosity")
    if p.display_perf_ewma is not None and not 0 < p.display_perf_ewma <= 1:
        fail("display_perf_ewma", p.display_perf_ewma, "must be in (0, 1]")
