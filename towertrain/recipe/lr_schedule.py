"""The learning rate as a function of the global step: the Keras side of the
learning-rate recipe, whose numbers towertrain.plan.learning_rate works out.

    schedule = build(run_plan.recipe.learning_rate)   # towertrain.plan.learning_rate
    keras.optimizers.SGD(schedule)      # Keras calls schedule(optimizer.iterations)

Keras optimizers call a LearningRateSchedule with their `iterations`: the
updates applied so far, which is the global step checkpoints save and
restore, so a resumed run continues its schedule where it stopped.

Step convention: `value_at(s)` is the rate of the update that takes the
global step from s to s + 1 (the loop's step s + 1).

- Linear scaling (--scale_learning_rate=linear): every rate x global batch /
  --base_batch_size. Towers already average over the global batch, so there
  is no division by the number of devices.
- Piecewise (--piecewise_learning_rate_schedule="LR0;E1;LR1;..."): LR0 until
  epoch E1, i.e. updates s < E1 x steps_per_epoch; the update that starts
  epoch E1 (s = E1 x steps_per_epoch) and all later ones until E2 use LR1.
- Staircase (--num_epochs_per_decay, --learning_rate_decay_factor): the rate
  x factor ** floor(s / decay_steps), never below --minimum_learning_rate.
- Cosine: minimum + (rate - minimum) x (1 + cos(pi x min(s, T) / T)) / 2 over
  the run's T total steps (Keras' CosineDecay): update 0 uses the full rate,
  s >= T the minimum.
- Warmup (--num_learning_rate_warmup_epochs, W steps) multiplies whatever the
  schedule gives by min(1, (s + 1) / W): the first update uses 1/W of the
  rate, the W-th (s = W - 1) and later the full rate; no update runs at 0.
- An epoch is ceil(examples / global batch) steps (the last, partial batch is
  a step), the examples of --data_dir (or of an Input with num_examples), or
  --num_examples_per_epoch for synthetic data.
- --minimum_learning_rate is an absolute floor; it is not scaled.
- A model's own recipe (towertrain.plan.learning_rate.model_recipe:
  tf_cnn_benchmarks' get_learning_rate) warms up from 0 instead (warmup_from_zero): update s < W
  uses the first rate x s / W, later ones the schedule; its boundaries and
  scale are worked out there, in tf_cnn_benchmarks' arithmetic.
"""
import dataclasses
import math

import keras
import tensorflow as tf


def _epochs(count):
    return f"{count:g} epoch" + ("" if count == 1 else "s")


def build(learning_rate):
    """The run's Schedule from the plan's LearningRate (towertrain.plan.learning_rate:
    the flags already turned into steps and checked there)."""
    return Schedule(**dataclasses.asdict(learning_rate))


class Schedule(keras.optimizers.schedules.LearningRateSchedule):
    """The learning rate of the update at global step `step` (see the module doc).

    initial_value: the first rate after scaling, before warmup (what
    --init_learning_rate became). value_at(step) -> float; describe() -> one
    header line."""

    def __init__(self, kind, base_values, scale=1.0, boundaries=(), boundary_epochs=(),
                 decay_steps=None, decay_factor=None, decay_epochs=None, minimum=0.0,
                 cosine_steps=None, warmup_steps=0, warmup_epochs=None, global_batch=None,
                 base_batch_size=None, steps_per_epoch=None, warmup_from_zero=False,
                 scale_text=None, epoch_text=None, origin=None, source="flags"):
        super().__init__()
        self.kind = kind
        self.base_values = [float(v) for v in base_values]
        self.scale = float(scale)
        self.values = [v * self.scale for v in self.base_values]
        self.boundaries = [int(b) for b in boundaries]
        self.boundary_epochs = list(boundary_epochs)
        self.decay_steps = decay_steps
        self.decay_factor = decay_factor
        self.decay_epochs = decay_epochs
        self.minimum = float(minimum or 0.0)
        self.cosine_steps = cosine_steps
        self.warmup_steps = int(warmup_steps)
        self.warmup_epochs = warmup_epochs
        self.global_batch = global_batch
        self.base_batch_size = base_batch_size
        self.steps_per_epoch = steps_per_epoch
        self.warmup_from_zero = bool(warmup_from_zero)
        # A recipe's header parts (towertrain.plan.learning_rate.model_recipe): how
        # the first rate was scaled, what an epoch is, whose recipe it is.
        self.scale_text, self.epoch_text, self.origin = scale_text, epoch_text, origin
        self.source = source  # flags, recipe, model (its constant) or kept (a resume's)

    @property
    def initial_value(self):
        return self.values[0]

    def __call__(self, step):
        # float64 throughout: exact step arithmetic up to 2**53, and every op
        # has CPU and GPU kernels. Only Python values select the branches.
        with tf.name_scope("learning_rate"):
            step = tf.cast(step, tf.float64)
            rate = self._decayed(step)
            if self.warmup_steps > 0 and self.warmup_from_zero:
                # tf_cnn_benchmarks' ResnetModel: the first rate x s / W before W.
                ramp = self.initial_value * step / float(self.warmup_steps)
                rate = tf.where(step < float(self.warmup_steps), ramp, rate)
            elif self.warmup_steps > 0:
                rate = rate * tf.minimum(tf.constant(1.0, tf.float64),
                                         (step + 1.0) / float(self.warmup_steps))
            return tf.cast(rate, tf.float32)

    def _decayed(self, step):
        initial = tf.constant(self.initial_value, tf.float64)
        if self.kind == "piecewise":
            passed = tf.cast(step >= tf.constant(self.boundaries, tf.float64), tf.int32)
            return tf.gather(tf.constant(self.values, tf.float64), tf.reduce_sum(passed))
        if self.kind == "staircase":
            exponent = tf.floor(step / float(self.decay_steps))
            rate = initial * tf.pow(tf.constant(self.decay_factor, tf.float64), exponent)
            return tf.maximum(rate, self.minimum)
        if self.kind == "cosine":
            progress = tf.minimum(step, float(self.cosine_steps)) / float(self.cosine_steps)
            return self.minimum + (initial - self.minimum) * 0.5 * (
                1.0 + tf.cos(math.pi * progress))
        return initial

    def value_at(self, step):
        """The rate (a Python float) of the update that takes the global step from
        `step` to `step` + 1, computed by the same ops the optimizer runs."""
        return float(self(tf.constant(step, tf.int64)))

    def describe(self):
        """One line for the run's header."""
        if self.source == "recipe":
            return self._describe_recipe()
        if self.scale != 1.0:
            scaling = (f" x {self.global_batch}/{self.base_batch_size} (linear scaling)")
            text = (f"{self.base_values[0]:g}{scaling} = {self.initial_value:g}"
                    if self.kind != "piecewise" else f"piecewise{scaling}:")
        else:
            text = f"{self.initial_value:g}" if self.kind != "piecewise" else "piecewise:"
        if self.kind == "constant":
            text += ", constant"
        elif self.kind == "piecewise":
            parts = [f"{value:g} until epoch {epoch:g} (step {boundary})" for value, epoch,
                     boundary in zip(self.values, self.boundary_epochs, self.boundaries)]
            text += " " + ", ".join(parts) + f", then {self.values[-1]:g}"
        elif self.kind == "staircase":
            text += (f"; x{self.decay_factor:g} every {_epochs(self.decay_epochs)} "
                     f"({self.decay_steps} steps)")
            if self.minimum:
                text += f", floor {self.minimum:g}"
        elif self.kind == "cosine":
            text += f"; cosine to {self.minimum:g} at step {self.cosine_steps}"
        if self.warmup_epochs:
            text += (f"; linear warmup over {_epochs(self.warmup_epochs)} "
                     f"({self.warmup_steps} steps)")
        if self.kind in ("piecewise", "staircase") or self.warmup_epochs:
            text += f"; epoch = {self.steps_per_epoch} steps"
            if self.epoch_text:
                text += f" ({self.epoch_text})"
        return text + (f" ({self.origin})" if self.origin else "")

    def _describe_recipe(self):
        # e.g. "0.128 x 256/256 = 0.128, warmup from 0 over 5 epochs (5004 steps),
        # x0.1 after epochs 30, 60, 80, 90 (steps ...); epoch = ... (resnet50's ...)"
        text = f"{self.base_values[0]:g}"
        if self.scale_text:
            text += f"{self.scale_text} = {self.initial_value:g}"
        if self.warmup_steps:
            text += (f", warmup from 0 over {_epochs(self.warmup_epochs)} "
                     f"({self.warmup_steps} steps)")
        if self.kind == "constant":
            text += ", constant"
        elif self.kind == "piecewise":
            parts = [f"{value:g} until epoch {epoch:g} (step {boundary})" for value, epoch,
                     boundary in zip(self.values, self.boundary_epochs, self.boundaries)]
            text += ", " + ", ".join(parts) + f", then {self.values[-1]:g}"
        elif self.kind == "staircase":
            text += (f", x{self.decay_factor:g} every {_epochs(self.decay_epochs)} "
                     f"({self.decay_steps} steps)")
        if self.epoch_text:
            text += f"; {self.epoch_text}"
        return text + f" ({self.origin})"

    def get_config(self):
        return dict(kind=self.kind, base_values=self.base_values, scale=self.scale,
                    boundaries=self.boundaries, boundary_epochs=self.boundary_epochs,
                    decay_steps=self.decay_steps, decay_factor=self.decay_factor,
                    decay_epochs=self.decay_epochs, minimum=self.minimum,
                    cosine_steps=self.cosine_steps, warmup_steps=self.warmup_steps,
                    warmup_epochs=self.warmup_epochs, global_batch=self.global_batch,
                    base_batch_size=self.base_batch_size,
                    steps_per_epoch=self.steps_per_epoch,
                    warmup_from_zero=self.warmup_from_zero, scale_text=self.scale_text,
                    epoch_text=self.epoch_text, origin=self.origin, source=self.source)
