"""What the engine asks of an input: a small explicit base class.

    class MyInput(Input):
        def create(self, devices): ...             # eager, once
        def tower_batches(self, devices): ...      # inside the step function

Everything else has a default that says "not available": an input without an
epoch length cannot run --num_epochs, one without an eval split cannot be
evaluated (never a silent stand-in), one without a savable position resumes
from its start.
"""
import collections
import math
from towertrain.errors import NoEvalSplitError  # noqa: F401 - raised here

EvalData = collections.namedtuple("EvalData", "dataset num_examples description batch_size",
                                  defaults=(None,))
EvalData.__doc__ = """A finite eval set: `dataset` of (images, labels) batches in the
model's layout, every example exactly once, in a fixed order; `description`
names the split for the output (e.g. 'cifar10 test_batch.bin'); `batch_size`
the examples per batch (the last may be smaller), where known."""



class Input:
    """Base class of every input source.

    Attributes a subclass may set: `name` (shown in the header), `global_batch`
    (examples per step), `num_examples` (finite data: examples per epoch),
    `description` (names the data in error messages, e.g. '--data_dir=D'),
    `stage` (False: the data already lives on the devices; staging would only
    copy it).
    """

    name = "input"
    stage = True
    global_batch = None
    num_examples = None
    description = None

    def create(self, devices):
        """Eager, once, before the step is traced."""

    def tower_batches(self, devices):
        """Inside the step: one (images, labels) pair per device."""
        raise NotImplementedError(f"{type(self).__name__}.tower_batches")

    @property
    def steps_per_epoch(self):
        """Steps per pass over finite data (the last may be partial); None: no epochs."""
        if self.num_examples is None or not self.global_batch:
            return None
        return math.ceil(self.num_examples / self.global_batch)

    def eval_data(self, batch_size):
        """The eval split as EvalData with batches of `batch_size` examples.

        Raises NoEvalSplitError when there is none: a caller must never fall
        back to other data and report its score as this input's.
        """
        raise NoEvalSplitError(f"{self.description or self.name}: this input has no eval "
                               "split; pass eval data explicitly")

    def checkpoint_state(self):
        """A trackable holding the input's position (saved in checkpoints), or None."""
        return None

    def resume_after(self, step):
        """The run trains global steps step+1, ... next (0: a new run). An input
        whose position is not in checkpoints (checkpoint_state None) but whose
        batch sequence is fixed starts at batch `step` here; the default does
        nothing."""

    def raise_pending_error(self):
        """Re-raises a failure that happened off the step (a feeder thread), if any."""

    def close(self):
        """Releases what create() started (threads, queues); safe to call twice."""


class WrappedInput(Input):
    """An input in front of another (staging, a worker's shard): everything it
    does not change is the inner input's."""

    def __init__(self, inner):
        self.inner = inner

    def eval_data(self, batch_size):
        return self.inner.eval_data(batch_size)

    def checkpoint_state(self):
        return self.inner.checkpoint_state()

    def resume_after(self, step):
        self.inner.resume_after(step)

    def raise_pending_error(self):
        self.inner.raise_pending_error()

    def close(self):
        self.inner.close()
