"""Stops the run at the first step whose loss or gradients were not finite."""
import math

from towertrain.errors import TrainingDivergedError

from .base import Callback


class DivergenceGuard(Callback):
    """The step itself applied nothing (its in-graph check); this stops the run
    before any callback could save, with the step and a hint."""

    def __init__(self, learning_rate):
        self.learning_rate = learning_rate

    def after_step(self, step, result, seconds):
        if result.finite:
            return
        what = (f"gradients are not finite (loss {result.loss:.4g})"
                if math.isfinite(result.loss) else f"loss is {result.loss}")
        raise TrainingDivergedError(
            f"{what} at step {step}; nothing from this step was applied and nothing "
            f"was saved; try a lower --init_learning_rate (now {self.learning_rate:g}) "
            "or, with loss scaling, a lower loss scale")
