"""When eval during training runs: the --eval_during_training_* flags as a
schedule of global steps, with tf_cnn_benchmarks' rules.

- every_n_steps N: each global step divisible by N;
- every_n_epochs E: after epochs E, 2E, ... before the run's end, epoch e
  ending at global step ceil(e * steps per epoch);
- at_specified_steps: those global steps;
- at_specified_epochs: the steps those epochs end at (same rounding).
tf_cnn_benchmarks rounds e * examples / batch up instead: the same step
whenever the batch divides the epoch; towertrain's epochs end with their
partial batch, so its epoch e ends exactly at step e * steps per epoch.

Every schedule also evaluates once more at the run's last step unless a
scheduled eval already ran there (tf_cnn_benchmarks' final evaluation), so a
run always ends with the accuracy of what it trained.
"""
import math

from towertrain.engine.evaluation import settings as evaluation_settings
from towertrain.errors import ParamsError


class EvalSchedule:
    """due(step): whether an eval runs after global step `step`;
    next_after(step): the next such step (None past the end)."""

    def __init__(self, total_steps, every_n_steps=None, steps=()):
        self.total_steps = total_steps
        self.every_n_steps = every_n_steps
        self.steps = frozenset(s for s in steps if s <= total_steps)

    def due(self, step):
        if step == self.total_steps:
            return True
        if self.every_n_steps:
            return step % self.every_n_steps == 0
        return step in self.steps

    def next_after(self, step):
        if step >= self.total_steps:
            return None
        if self.every_n_steps:
            return min((step // self.every_n_steps + 1) * self.every_n_steps,
                       self.total_steps)
        return min([s for s in self.steps if s > step] + [self.total_steps])

    def describe(self):
        if self.every_n_steps:
            return f"every {self.every_n_steps} steps and at step {self.total_steps}"
        shown = sorted(self.steps | {self.total_steps})
        text = ", ".join(str(s) for s in shown[:8]) + (", ..." if len(shown) > 8 else "")
        return f"after steps {text}"


def epoch_end_step(epoch, steps_per_epoch):
    """The global step that epoch `epoch` (a float) ends at, rounded up."""
    return max(1, math.ceil(round(epoch * steps_per_epoch, 9)))


def for_params(params, total_steps, steps_per_epoch):
    """The schedule the Params ask for, or None without an eval_during_training flag.

    steps_per_epoch: the training epoch's length in steps (None when unknown:
    then the epoch-based flags are an error naming what is missing)."""
    flag = evaluation_settings.eval_during_training(params)
    if flag is None:
        return None
    value = getattr(params, flag)
    if flag == "eval_during_training_every_n_steps":
        return EvalSchedule(total_steps, every_n_steps=value)
    if flag == "eval_during_training_at_specified_steps":
        return EvalSchedule(total_steps, steps=evaluation_settings.parse_steps(value))
    if not steps_per_epoch:
        raise ParamsError(f"--{flag}={value}: needs the epoch length (--data_dir, or "
                          "--num_examples_per_epoch for synthetic data)")
    if flag == "eval_during_training_every_n_epochs":
        run_epochs = total_steps / steps_per_epoch
        # tf_cnn_benchmarks: np.arange(n, num_epochs, n); the end is the final eval.
        epochs = [value * k for k in range(1, math.ceil(run_epochs / value) + 1)
                  if value * k < run_epochs]
    else:
        epochs = evaluation_settings.parse_epochs(value)
    return EvalSchedule(total_steps, steps=[
        epoch_end_step(e, steps_per_epoch) for e in epochs])
