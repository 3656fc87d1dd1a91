"""The feed's position: which global batches the next update trains on, and
keeping the staged batches consistent with it (begin, fences, drain, restore).

The global step counts updates; the input's position counts global batches
(with --gradient_accumulation_steps=K an update takes up to K of them:
towertrain.plan.accumulation). The position follows the input, so an update
skipped as non-finite (the global step stays) has still used up its batches,
and the next one takes the batches after them, as far as the epoch's end.
"""
import itertools

from towertrain.engine.step import accumulate
from towertrain.plan import steps as steps_plan


class FeedPosition:
    """input: the run's Input (the staging wrapper when staging is on);
    staging: that StagedInput, or None; accumulation: the plan's
    accumulation.AccumulationPlan; total_steps: the run's last global step."""

    def __init__(self, input_source, staging, accumulation, total_steps):
        self.input = input_source
        self.staging = staging
        self.accumulation = accumulation
        self.total_steps = total_steps
        self.next_update = 0  # the index of the next update the feed serves
        self._started = False
        if staging is not None:
            staging.start_at(0, self.position(total_steps))

    @property
    def accumulating(self):
        """Whether updates are split into micro-batches."""
        return self.accumulation.accumulating

    def position(self, step):
        """The input's position (global batches handed out) after global step `step`."""
        return self.accumulation.batches_before(step)

    def phases(self):
        """The step function calls of the next update: one, or one per micro-batch
        (an iterator: a list of --gradient_accumulation_steps=2**62 calls would
        not fit in memory)."""
        if not self.accumulating:
            return iter([accumulate.WHOLE])
        count = self.accumulation.micro_batches(self.next_update)
        return itertools.chain(itertools.repeat(accumulate.ACCUMULATE, count - 1),
                               [accumulate.APPLY])

    def begin(self, start_step, warmup=0):
        """The loop starts after global step `start_step` (0, or a resumed step),
        with `warmup` untimed steps first.

        A step before a fence or the run's end only drains (the step
        function's put=False variant). Its first call builds that function
        (TensorFlow optimizes the graph and makes its kernels: 1.4-1.9 s
        for resnet20 on 2 CPU devices), which would land in the run's last timed
        step and understate its total images/sec. With 2 or more warmup steps
        a fence after the first one makes that call there, untimed; the
        batches are the same ones in the same order, the second step stages
        its own (the priming a fence always brings)."""
        if self.staging is not None:
            self.staging.start_at(self.position(start_step), self.position(self.total_steps))
            fence = steps_plan.warmup_fence(start_step, warmup)
            if fence is not None:
                self.add_fence(fence)
        self.start(start_step)

    def start(self, start_step):
        """Tells the input where the run starts (a queue input starts feeding
        there); once, before the first step."""
        if not self._started:
            self._started = True
            self.next_update = start_step
            self.input.resume_after(self.position(start_step))

    def add_fence(self, step):
        """Nothing will be staged past global step `step`: a checkpoint taken
        right after it holds the input's exact position."""
        if self.staging is not None:
            self.staging.add_fence(self.position(step))

    def drain(self):
        """Stops staging; returns how many steps remain to train on what is staged.
        With accumulation the areas empty at the end of an update: staging goes
        on until that update's last micro-batch, never stopping mid-update."""
        if self.staging is None:
            return 0
        if not self.accumulating:
            return self.staging.drain()
        if not self.staging.staged:
            return 0
        step = self.next_update
        end = self.accumulation.first_update_at_or_after(
            self.position(step) + self.staging.staged)
        self.staging.add_fence(self.position(end))
        return end - step

    def staged_batches(self):
        return self.staging.staged if self.staging is not None else 0

    def restart_at(self, step):
        """After a restore: the next update is `step`'s, and staged batches
        (they belong to the old position) are dropped."""
        self.next_update = step
        if self.staging is not None:
            self.staging.start_at(self.position(step), self.position(self.total_steps))
