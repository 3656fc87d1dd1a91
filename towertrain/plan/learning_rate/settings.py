"""The learning rate's settings (--init_learning_rate, the schedule flags),
declared beside the code that reads them (towertrain.plan.learning_rate), with
their refusals.

A run-plan section too (towertrain.plan builds it from Params with
towertrain.config.declare.take); towertrain.config.settings collects its
fields into Params, the flags and the docs.
"""
from typing import Optional

from towertrain.config.declare import section, setting, tfcnn

LEARNING_RATE_SCHEDULES = ("cosine",)
LEARNING_RATE_SCALINGS = ("linear",)


@section("Learning rate")
class LearningRateSettings:
    init_learning_rate: Optional[float] = setting(
        None, "Initial learning rate (default: the model's own recipe, "
        "tf_cnn_benchmarks' schedule for it: docs/migration.md).",
        group="Training", training_only=True, tfcnn=tfcnn("float", None))
    piecewise_learning_rate_schedule: Optional[str] = setting(
        None, "'LR0;E1;LR1;...;En;LRn': LR0 until epoch E1, then LR1, ... (replaces "
        "--init_learning_rate).",
        training_only=True, tfcnn=tfcnn("string", None))
    num_epochs_per_decay: Optional[float] = setting(
        None, "Multiply the learning rate by --learning_rate_decay_factor every "
        "this many epochs (staircase).",
        training_only=True, tfcnn=tfcnn("float", 0, unset=True))
    learning_rate_decay_factor: Optional[float] = setting(
        None, "See --num_epochs_per_decay.",
        training_only=True, tfcnn=tfcnn("float", 0, unset=True))
    minimum_learning_rate: float = setting(
        0.0, "Floor of a decaying learning rate.",
        training_only=True, tfcnn=tfcnn("float", 0))
    learning_rate_schedule: Optional[str] = setting(
        None, "cosine: decay to --minimum_learning_rate over the run.",
        choices=LEARNING_RATE_SCHEDULES, training_only=True)
    num_learning_rate_warmup_epochs: Optional[float] = setting(
        None, "Ramp the learning rate linearly from 0 over this many epochs.",
        training_only=True, tfcnn=tfcnn("float", 0, unset=True))
    scale_learning_rate: Optional[str] = setting(
        None, "linear: multiply the learning rate by global batch / "
        "--base_batch_size.",
        choices=LEARNING_RATE_SCALINGS, training_only=True)
    base_batch_size: Optional[int] = setting(
        None, "The global batch the base learning rate was tuned for (with "
        "--scale_learning_rate).",
        training_only=True, applies_with=("scale_learning_rate", ("linear",)))

    @staticmethod
    def refuse(p, fail):
        if p.init_learning_rate is not None and not p.init_learning_rate > 0:
            fail("init_learning_rate", p.init_learning_rate, "must be > 0")
        decay = p.num_epochs_per_decay is not None or p.learning_rate_decay_factor is not None
        if p.piecewise_learning_rate_schedule is not None:
            try:
                parse_piecewise(p.piecewise_learning_rate_schedule)
            except ValueError as err:
                fail("piecewise_learning_rate_schedule", p.piecewise_learning_rate_schedule,
                     str(err))
            # tf_cnn_benchmarks' get_learning_rate refuses the same ones.
            for flag in ("init_learning_rate", "num_epochs_per_decay",
                         "learning_rate_decay_factor", "learning_rate_schedule",
                         "minimum_learning_rate"):
                if getattr(p, flag) not in (None, 0):
                    fail("piecewise_learning_rate_schedule", p.piecewise_learning_rate_schedule,
                         f"conflicts with --{flag}={getattr(p, flag)}: the piecewise schedule "
                         "sets every learning rate; drop one")
        if p.learning_rate_schedule == "cosine" and decay:
            flag = ("num_epochs_per_decay" if p.num_epochs_per_decay is not None
                    else "learning_rate_decay_factor")
            fail("learning_rate_schedule", "cosine", f"conflicts with --{flag}="
                 f"{getattr(p, flag)} (a staircase decay); drop one")
        if (p.num_epochs_per_decay is None) != (p.learning_rate_decay_factor is None):
            given, missing = (("num_epochs_per_decay", "learning_rate_decay_factor")
                              if p.num_epochs_per_decay is not None
                              else ("learning_rate_decay_factor", "num_epochs_per_decay"))
            fail(given, getattr(p, given), f"needs --{missing} as well")
        if p.num_epochs_per_decay is not None and not p.num_epochs_per_decay > 0:
            fail("num_epochs_per_decay", p.num_epochs_per_decay, "must be > 0")
        if p.learning_rate_decay_factor is not None and \
                not 0 < p.learning_rate_decay_factor <= 1:
            fail("learning_rate_decay_factor", p.learning_rate_decay_factor,
                 "must be in (0, 1]")
        if p.minimum_learning_rate < 0:
            fail("minimum_learning_rate", p.minimum_learning_rate, "must be >= 0")
        if p.minimum_learning_rate and not (decay or p.learning_rate_schedule):
            fail("minimum_learning_rate", p.minimum_learning_rate,
                 "only applies to a decaying schedule (--num_epochs_per_decay or "
                 "--learning_rate_schedule=cosine)")
        if p.num_learning_rate_warmup_epochs is not None and \
                p.num_learning_rate_warmup_epochs < 0:
            fail("num_learning_rate_warmup_epochs", p.num_learning_rate_warmup_epochs,
                 "must be >= 0")
        if p.scale_learning_rate is not None and p.base_batch_size is None:
            fail("scale_learning_rate", p.scale_learning_rate,
                 "needs --base_batch_size (the global batch the base learning rate is for)")
        if p.scale_learning_rate is not None and p.variable_update == "independent":
            fail("scale_learning_rate", p.scale_learning_rate, "conflicts with "
                 "--variable_update=independent: each copy trains on its own --batch_size, "
                 "there is no global batch to scale by")
        if p.base_batch_size is not None:
            if p.base_batch_size < 1:
                fail("base_batch_size", p.base_batch_size, "must be >= 1")


def parse_piecewise(text):
    """'LR0;E1;LR1;...;En;LRn' -> ([LR0, ..., LRn], [E1, ..., En]): LR0 until
    epoch E1, then LR1, ...; raises ValueError saying what is wrong."""
    pieces = [piece.strip() for piece in str(text).split(";")]
    if len(pieces) % 2 == 0:
        raise ValueError("needs 'LR0;E1;LR1;...;En;LRn': an odd number of ';'-separated "
                         f"numbers (got {len(pieces)})")
    try:
        numbers = [float(piece) for piece in pieces]
    except ValueError:
        raise ValueError("needs 'LR0;E1;LR1;...;En;LRn' with numbers only") from None
    rates, epochs = numbers[0::2], numbers[1::2]
    if not all(rate > 0 for rate in rates):
        raise ValueError("every learning rate must be > 0")
    if not all(epoch > 0 for epoch in epochs) or any(
            later <= earlier for earlier, later in zip(epochs, epochs[1:])):
        raise ValueError("the epoch boundaries must be > 0 and increasing")
    return rates, epochs
