"""Gradient accumulation (--gradient_accumulation_steps=K): which global
batches make up each update.

    plan = AccumulationPlan(steps=4, batches_per_epoch=10)
    plan.updates_per_epoch          # 3: updates of 4, 4 and 2 batches
    plan.micro_batches(2)           # 2: the update taking the global step 2 -> 3
    plan.batches_before(3)          # 10: the input position after 3 updates

An update takes K consecutive global batches (micro-batches); with an epoch
length, an epoch's last update takes the batches that are left, so no update
spans two epochs and epochs still count examples. Without one, every update
takes K. The global step counts updates: the learning-rate schedule, warmup,
loss scaling, clipping, checkpoints, eval and the loop's steps all see
updates; the input position (resume, staging) is counted in batches, and
`batches_before` translates. K = 1 is the identity everywhere.
"""
import math


class AccumulationPlan:
    """steps: K. batches_per_epoch: global batches per epoch (the last may be
    partial), or None when the data has no epoch length."""

    def __init__(self, steps=1, batches_per_epoch=None):
        if steps < 1:
            raise ValueError(f"gradient accumulation steps must be >= 1, got {steps}")
        self.steps = int(steps)
        self.batches_per_epoch = batches_per_epoch

    @property
    def accumulating(self):
        return self.steps > 1

    @property
    def updates_per_epoch(self):
        """Updates per epoch (None without an epoch length)."""
        if self.batches_per_epoch is None:
            return None
        return math.ceil(self.batches_per_epoch / self.steps)

    def micro_batches(self, step):
        """Global batches in the update that takes the global step from `step`
        to `step` + 1."""
        if self.batches_per_epoch is None:
            return self.steps
        first = (step % self.updates_per_epoch) * self.steps
        return min(self.steps, self.batches_per_epoch - first)

    def batches_before(self, step):
        """Global batches the first `step` updates train on (the input's position)."""
        if self.batches_per_epoch is None:
            return step * self.steps
        epochs, within = divmod(step, self.updates_per_epoch)
        return epochs * self.batches_per_epoch + within * self.steps

    def first_update_at_or_after(self, batches):
        """The smallest global step whose position batches_before() is >= `batches`:
        where a stop that must not split an update can land."""
        if self.batches_per_epoch is None:
            return math.ceil(batches / self.steps)
        epochs, within = divmod(batches, self.batches_per_epoch)
        return epochs * self.updates_per_epoch + math.ceil(within / self.steps)

    def describe(self, global_batch):
        """The header's value: K and the examples of a full update."""
        return (f"{self.steps} batches per update ({global_batch * self.steps} examples; "
                "the last update of an epoch takes the batches left)")
