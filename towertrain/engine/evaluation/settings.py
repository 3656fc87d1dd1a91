"""Evaluation's settings, declared beside the code that evaluates
(towertrain.engine.evaluation; towertrain.plan.eval_schedule for evaluation
during training), with their refusals and the parsers of their lists.
"""
from typing import Optional

from towertrain.config.declare import NOT_USED, section, setting, tfcnn

# The --eval_during_training_* flags: at most one may be given.
EVAL_DURING_TRAINING = ("eval_during_training_every_n_steps",
                        "eval_during_training_every_n_epochs",
                        "eval_during_training_at_specified_steps",
                        "eval_during_training_at_specified_epochs")


@section("Checkpoints and evaluation")
class Evaluation:
    eval: bool = setting(
        False, "Evaluate top-1/top-5 accuracy of a checkpoint instead of training; "
        "--model and --data_name default to those the --train_dir was trained "
        "with.",
        scaling=NOT_USED, tfcnn=tfcnn("boolean", False),
        forward_only=False)
    eval_batch_size: Optional[int] = setting(
        None, "Batch size per device for evaluation (default: the training batch "
        "per device).",
        scaling=NOT_USED, tfcnn=tfcnn("integer", 0, unset=True),
        forward_only=False)
    eval_during_training_every_n_steps: Optional[int] = setting(
        None, "Evaluate every this many training steps, and at the end.",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("integer", None))
    eval_during_training_every_n_epochs: Optional[float] = setting(
        None, "Evaluate after every this many epochs, and at the end.",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("float", None))
    eval_during_training_at_specified_steps: Optional[str] = setting(
        None, "'S1,S2,...': evaluate after these global steps, and at the end.",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("list", [], unset=True))
    eval_during_training_at_specified_epochs: Optional[str] = setting(
        None, "'E1,E2,...': evaluate after these epochs (fractions allowed), and at "
        "the end.",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("list", [], unset=True))
    stop_at_top_1_accuracy: Optional[float] = setting(
        None, "Stop training once an eval during training reaches this top-1 (the "
        "last checkpoint is then final).",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("float", None))
    num_eval_batches: Optional[int] = setting(
        None, "Evaluate this many full batches, repeating the eval split as needed "
        "(default: the split once).",
        scaling=NOT_USED, tfcnn=tfcnn("integer", None))
    num_eval_epochs: Optional[float] = setting(
        None, "Evaluate ceil(this x split size / batch) full batches, repeating the "
        "split as needed (default: 1 pass).",
        scaling=NOT_USED, tfcnn=tfcnn("float", None))
    eval_interval_secs: float = setting(
        0.0, "With --eval: follow --train_dir, checking for new checkpoints every "
        "this many seconds; each is evaluated once, in step order, until the "
        "run's final one (0: evaluate once).",
        scaling=NOT_USED, tfcnn=tfcnn("integer", 0))
    eval_dir: Optional[str] = setting(
        None, "With --eval: write the results as TensorBoard events (accuracy/top1, "
        "accuracy/top5 at each checkpoint's step) here.",
        scaling=NOT_USED, path=True,
        tfcnn=tfcnn("string", "/tmp/tf_cnn_benchmarks/eval", "towertrain writes eval events "
                    "only when it is given (tf_cnn_benchmarks' --eval always writes "
                    "them, by default to /tmp/tf_cnn_benchmarks/eval)"),
        forward_only=False)

    @staticmethod
    def refuse(p, fail):
        if p.eval and not (p.train_dir or p.checkpoint):
            fail("eval", True, "needs --train_dir (latest checkpoint) or --checkpoint")
        every = p.eval_during_training_every_n_steps
        if every is not None and not every > 0:
            fail("eval_during_training_every_n_steps", every, "must be > 0")
        if p.eval_batch_size is not None:
            if p.eval_batch_size < 1:
                fail("eval_batch_size", p.eval_batch_size, "must be >= 1 (it is the batch "
                     "per device)")
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

    @staticmethod
    def refuse_given(p, explicit, fail):
        # Library users may call Trainer.evaluate() at any time, so only the CLI
        # knows that no eval will run.
        for flag in ("eval_batch_size", "num_eval_batches", "num_eval_epochs"):
            if getattr(p, flag) is not None and not (p.eval or eval_during_training(p)):
                fail(flag, getattr(p, flag), "only applies with --eval or "
                     "--eval_during_training_every_n_steps (or another "
                     "--eval_during_training_* flag)")


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


