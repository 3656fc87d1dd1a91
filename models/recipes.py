"""A model's own learning-rate recipe, as data: what it trains with when no
learning-rate flag is given (--init_learning_rate, --piecewise_learning_rate_schedule).

Installed as `towertrain.models.recipes`. Plain Python (no Keras): the catalog
reads it. towertrain.plan.learning_rate turns a recipe into the run's schedule
for its global batch, epoch and gradient exchange.

The built-in recipes are tf_cnn_benchmarks' `get_learning_rate` overrides
(tensorflow/benchmarks, scripts/tf_cnn_benchmarks/models/), restated as
numbers: its step arithmetic (how an epoch becomes steps, where a boundary
falls, warmup from 0) is kept exactly, so the same global batch gives the
same rate at every step.
"""
import dataclasses
from typing import Optional, Tuple

# How a recipe turns E epochs into steps, for N examples an epoch and a global
# batch of B (tf_cnn_benchmarks writes each model's differently, and the
# results differ by a step or more at some batch sizes):
#   "fraction": int(N / B * E)   (ResnetModel; also the flags' decay and warmup)
#   "whole":    (N // B) * E     (ResnetCifar10Model, DensenetCifar10Model)
#   "total":    (E * N) // B     (AlexnetCifar10Model's decay)
# (towertrain.plan.learning_rate.model_recipe.epochs_to_steps counts them).
EPOCH_STEPS = ("fraction", "whole", "total")


@dataclasses.dataclass(frozen=True)
class LearningRateRecipe:
    """A learning-rate schedule in epochs.

    values: the rates before batch scaling; values[0] until the first
      boundary, then values[1], ... (one value: constant, or staircase).
    boundary_epochs: piecewise: the epochs after which the next value
      applies. As tf.train.piecewise_constant, the step a boundary falls on
      still uses the earlier value; the next step the later one.
    decay_epochs, decay_factor: staircase: values[0] x decay_factor **
      floor(step / steps(decay_epochs)) (tf.train.exponential_decay).
    warmup_epochs: linear warmup from 0: step s < W uses the first rate x s / W.
    per_examples: batch scaling: every rate x global batch / per_examples.
    divide_in_replicated: the rates are divided by the devices of a
      --variable_update=replicated run (tf_cnn_benchmarks' ResnetModel, whose
      replicated mode sums the devices' gradients).
    epoch_steps: how epochs become steps (EPOCH_STEPS).
    origin: whose recipe it is, for the header ("tf_cnn_benchmarks' ...").
    """
    values: Tuple[float, ...]
    boundary_epochs: Tuple[float, ...] = ()
    decay_epochs: Optional[float] = None
    decay_factor: Optional[float] = None
    warmup_epochs: float = 0.0
    per_examples: Optional[int] = None
    divide_in_replicated: bool = False
    epoch_steps: str = "fraction"
    origin: Optional[str] = None

    def __post_init__(self):
        if not self.values or not all(v > 0 for v in self.values):
            raise ValueError("a learning-rate recipe needs values, every one > 0")
        if len(self.values) != len(self.boundary_epochs) + 1:
            raise ValueError(f"a learning-rate recipe needs one value more than boundaries "
                             f"(got {len(self.values)} values, "
                             f"{len(self.boundary_epochs)} boundaries)")
        if (self.decay_epochs is None) != (self.decay_factor is None) or (
                self.decay_epochs is not None and self.boundary_epochs):
            raise ValueError("a learning-rate recipe's staircase needs both decay_epochs and "
                             "decay_factor, and no boundaries")
        if self.epoch_steps not in EPOCH_STEPS:
            raise ValueError(f"epoch_steps must be one of {', '.join(EPOCH_STEPS)}")

    @property
    def kind(self):
        if self.boundary_epochs:
            return "piecewise"
        if self.decay_epochs is not None:
            return "staircase"
        return "constant"

    @property
    def varies(self):
        """Whether the rate depends on the step, the batch or the mode (not a
        plain constant): what the learning-rate flags would replace."""
        return (self.kind != "constant" or bool(self.warmup_epochs)
                or self.per_examples is not None or self.divide_in_replicated)


def constant(rate):
    """The recipe of a model without one: `rate` at every step."""
    return LearningRateRecipe(values=(float(rate),))


# tf_cnn_benchmarks' recipes, by the class that defines them.

# models/resnet_model.py, ResnetModel (resnet50, resnet50_v1.5, resnet101,
# resnet152): --resnet_base_lr 0.128 per 256 examples, divided by the GPUs in
# replicated mode (get_scaled_base_learning_rate), warmup from 0 over 5
# epochs, x0.1 after epochs 30, 60, 80 and 90 of 1,281,167 examples.
RESNET_IMAGENET = LearningRateRecipe(
    values=(0.128, 0.0128, 0.00128, 0.000128, 0.0000128),
    boundary_epochs=(30, 60, 80, 90), warmup_epochs=5, per_examples=256,
    divide_in_replicated=True, epoch_steps="fraction",
    origin="tf_cnn_benchmarks' ResnetModel")

# models/resnet_model.py, ResnetCifar10Model (resnet20 .. resnet110, _v2).
RESNET_CIFAR = LearningRateRecipe(
    values=(0.1, 0.01, 0.001, 0.0002), boundary_epochs=(82, 123, 300),
    epoch_steps="whole", origin="tf_cnn_benchmarks' ResnetCifar10Model")

# models/densenet_model.py, DensenetCifar10Model (densenet40_k12).
DENSENET_CIFAR = LearningRateRecipe(
    values=(0.1, 0.01, 0.001, 0.0001), boundary_epochs=(150, 225, 300),
    epoch_steps="whole", origin="tf_cnn_benchmarks' DensenetCifar10Model")

# models/alexnet_model.py, AlexnetCifar10Model (alexnet on cifar10:
# alexnet_cifar): x0.1 every 100 epochs, staircase.
ALEXNET_CIFAR = LearningRateRecipe(
    values=(0.1,), decay_epochs=100, decay_factor=0.1, epoch_steps="total",
    origin="tf_cnn_benchmarks' AlexnetCifar10Model")
