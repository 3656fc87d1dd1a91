"""The learning-rate schedule in global steps: the --*learning_rate* flags
turned into steps (updates) once, and checked, before anything is built
(towertrain.recipe.lr_schedule makes the Keras schedule from it; its module
doc gives the rules).

An epoch is the plan's updates per epoch (towertrain.plan.steps), so with
--gradient_accumulation_steps the boundaries, decay and warmup count updates,
as the eval schedule does.
"""
import dataclasses
import math
from typing import Optional, Tuple

from towertrain.errors import ParamsError
from towertrain.plan.learning_rate import settings as lr_settings

_NEEDS_EPOCH = ("needs the epoch length: --data_dir, or --num_examples_per_epoch for "
                "synthetic data")


@dataclasses.dataclass(frozen=True)
class LearningRate:
    """The schedule's terms (towertrain.recipe.lr_schedule.Schedule's arguments)."""
    kind: str  # constant, piecewise, staircase or cosine
    base_values: Tuple[float, ...]
    scale: float = 1.0
    boundaries: Tuple[int, ...] = ()
    boundary_epochs: Tuple[float, ...] = ()
    decay_steps: Optional[int] = None
    decay_factor: Optional[float] = None
    decay_epochs: Optional[float] = None
    minimum: float = 0.0
    cosine_steps: Optional[int] = None
    warmup_steps: int = 0
    warmup_epochs: Optional[float] = None
    global_batch: Optional[int] = None
    base_batch_size: Optional[int] = None
    steps_per_epoch: Optional[int] = None
    # A model's recipe (model_recipe.py beside this): warmup from 0, and the
    # header's parts. source: flags, recipe, model (its constant rate) or kept
    # (a run recorded before recipes keeps the constant it trained with).
    warmup_from_zero: bool = False
    scale_text: Optional[str] = None
    epoch_text: Optional[str] = None
    origin: Optional[str] = None
    source: str = "flags"

    @property
    def initial_value(self) -> float:
        """The first rate after scaling, before warmup."""
        return float(self.base_values[0]) * self.scale


def _epochs_to_steps(epochs, steps_per_epoch):
    # The epsilon keeps 0.29 epochs x 100 steps at 29, not 28.999999999999996 -> 28.
    return int(math.floor(epochs * steps_per_epoch + 1e-9))


def learning_rate(params, base_learning_rate, global_batch, steps_per_epoch,
                  total_steps=None) -> LearningRate:
    """The run's LearningRate. base_learning_rate: --init_learning_rate or the
    model's default (a piecewise schedule brings its own rates). global_batch:
    examples per update. steps_per_epoch: updates per epoch, None when the data
    has no epoch length (then an epoch-based flag is an error naming it).
    total_steps: the run's last global step (cosine decays over it)."""
    p = params
    scale = 1.0
    if p.scale_learning_rate == "linear":
        scale = global_batch / p.base_batch_size

    def need_epochs(flag):
        if steps_per_epoch is None:
            raise ParamsError(f"--{flag}={getattr(p, flag)}: {_NEEDS_EPOCH}")

    kind, values, boundaries, boundary_epochs = "constant", [base_learning_rate], [], []
    decay_steps = cosine_steps = None
    if p.piecewise_learning_rate_schedule is not None:
        values, boundary_epochs = lr_settings.parse_piecewise(
            p.piecewise_learning_rate_schedule)
        if boundary_epochs:
            need_epochs("piecewise_learning_rate_schedule")
            kind = "piecewise"
            boundaries = [_epochs_to_steps(e, steps_per_epoch) for e in boundary_epochs]
    elif p.num_epochs_per_decay is not None:
        need_epochs("num_epochs_per_decay")
        kind = "staircase"
        decay_steps = _epochs_to_steps(p.num_epochs_per_decay, steps_per_epoch)
        if decay_steps < 1:
            raise ParamsError(f"--num_epochs_per_decay={p.num_epochs_per_decay}: less than "
                              f"one step (an epoch is {steps_per_epoch} steps)")
    elif p.learning_rate_schedule == "cosine":
        if not total_steps:
            raise ParamsError("--learning_rate_schedule=cosine: needs the run's length")
        kind, cosine_steps = "cosine", int(total_steps)
    warmup_steps = 0
    if p.num_learning_rate_warmup_epochs:
        need_epochs("num_learning_rate_warmup_epochs")
        warmup_steps = _epochs_to_steps(p.num_learning_rate_warmup_epochs, steps_per_epoch)
    schedule = LearningRate(
        kind=kind, base_values=tuple(float(v) for v in values), scale=float(scale),
        boundaries=tuple(boundaries), boundary_epochs=tuple(boundary_epochs),
        decay_steps=decay_steps, decay_factor=p.learning_rate_decay_factor,
        decay_epochs=p.num_epochs_per_decay, minimum=float(p.minimum_learning_rate or 0.0),
        cosine_steps=cosine_steps, warmup_steps=warmup_steps,
        warmup_epochs=p.num_learning_rate_warmup_epochs, global_batch=global_batch,
        base_batch_size=p.base_batch_size, steps_per_epoch=steps_per_epoch)
    if kind in ("staircase", "cosine") and schedule.minimum > schedule.initial_value:
        raise ParamsError(f"--minimum_learning_rate={p.minimum_learning_rate}: above the "
                          f"learning rate it decays from ({schedule.initial_value:g})")
    return schedule
