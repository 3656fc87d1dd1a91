"""Stops the run at the first step whose loss or gradients were not finite."""
import math

from towertrain.recipe import precision
from towertrain.errors import TrainingDivergedError

from .base import Callback


class DivergenceGuard(Callback):
    """The step itself applied nothing (its in-graph check); this stops the run
    before any callback could save, with the step and a hint."""

    def __init__(self, learning_rate, dynamic_loss_scale=False, loss_probe=None):
        # A float, or a towertrain.recipe.lr_schedule.Schedule: the hint quotes its first rate.
        self.learning_rate = getattr(learning_rate, "initial_value", learning_rate)
        # With a dynamic fp16 loss scale an overflowing step is routine: the
        # step applied nothing and halved the scale. Only a non-finite loss, or
        # an overflow at the smallest scale, is a divergence.
        self.dynamic_loss_scale = dynamic_loss_scale
        self.skipped_steps = 0
        # RunHandles.loss_probe: a user's loss_fn that is not finite on finite logits.
        self.loss_probe = loss_probe

    def after_step(self, step, result, seconds):
        if result.finite:
            return
        if (self.dynamic_loss_scale and math.isfinite(result.loss)
                and result.extras.get("loss_scale", 0.0) > precision.MINIMUM_LOSS_SCALE):
            self.skipped_steps += 1
            return
        what = (f"gradients are not finite (loss {result.loss:.4g})"
                if math.isfinite(result.loss) else f"loss is {result.loss}")
        if step == 1 and self.loop is not None and self.loop.start_step == 0:
            # The initial weights, no update yet: the learning rate played no part.
            problem = self.loss_probe() if self.loss_probe is not None else None
            if problem:
                raise TrainingDivergedError(
                    f"{what} at step 1, from the initial weights before any update, so not "
                    f"from the learning rate: {problem}; nothing was applied or saved")
            source = ("the gradients (a layer or loss whose derivative is not finite at "
                      "these values)" if math.isfinite(result.loss) else
                      "the input batch (NaN or Inf in the images or labels) or the loss")
            raise TrainingDivergedError(
                f"{what} at step 1, from the initial weights before any update, so not from "
                f"the learning rate: it comes from {source}; check the data with "
                "np.isfinite and the model's or loss_fn's math; nothing was applied or saved")
        raise TrainingDivergedError(
            f"{what} at step {step}; nothing from this step was applied and nothing "
            f"was saved; try a lower --init_learning_rate (now {self.learning_rate:g}) "
            "or, with loss scaling, a lower loss scale (or, if the data may hold NaN or "
            "Inf, check it with np.isfinite)")
