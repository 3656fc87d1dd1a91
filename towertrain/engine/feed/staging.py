"""Per-device StagingArea double buffer in front of any input.

    staged = StagedInput(inner_input, depth=1)
    staged.create(devices)                       # eager: creates the inner input
    staged.start_at(step, total_steps)           # where the run starts and ends
    put = staged.before_step()                   # eager, before each step
    batches = staged.tower_batches(devices, put) # inside the step: get, then put the next

Each device owns one area (tf.raw_ops.Stage/Unstage with a fixed shared_name,
created under that device inside tf.function; the `StagingArea` object cannot
be used inside tf.function). The step computes on the batch
staged by the previous step while the put fetches, slices and copies the next
one; on a GPU the put is the host-to-device copy, so it overlaps compute.

Accounting is in global steps: `consumed` batches were trained on, `staged`
wait in every area, so the inner input has handed out consumed + staged.
Puts stop at a limit: the run's last step, or a *fence*, a step after which
the areas must be empty. A checkpoint is only ever taken at a fence, where
the input's saved position equals the trained step exactly, so a resume
neither skips nor repeats a batch; the first step after a fence primes the
areas again. A step beyond the plan stages a batch first, so an Unstage never
blocks on an empty area.
"""
import itertools

import tensorflow as tf

from towertrain.input_pipeline.base import WrappedInput

_instances = itertools.count()


class StagedInput(WrappedInput):
    """Wraps an input with one staging area per device."""

    def __init__(self, inner, depth=1, group=1):
        if depth < 1:
            raise ValueError(f"staging depth must be >= 1, got {depth}")
        super().__init__(inner)
        self.depth = depth
        # --batch_group_size: instead of one put per step, `group` batches are
        # put at once whenever the areas run empty, before the step (as
        # tf_cnn_benchmarks' producer put a group every `group` steps).
        self.group = group
        self._prefix = f"towertrain_staging_{next(_instances)}"
        self._devices = None
        self._dtypes = None
        self._shapes = None  # per device, per tensor: static shapes of a staged batch
        self._prime_fn = None
        self._size_fn = None
        self.staged = 0  # batches now in each area
        self.consumed = 0  # global step: batches trained on
        self.total_steps = None  # the global step the run ends at (None: unbounded)
        self._fences = set()
        self._used = False  # a batch was ever staged (tracing alone stages nothing)

    # What the engine asks of an input, answered by the inner one.
    @property
    def name(self):
        return f"{self.inner.name}, staged"

    @property
    def global_batch(self):
        return self.inner.global_batch

    @property
    def num_examples(self):
        return self.inner.num_examples

    @property
    def description(self):
        return self.inner.description

    @property
    def steps_per_epoch(self):
        return self.inner.steps_per_epoch

    def area_name(self, tower):
        return f"{self._prefix}_{tower}"

    def _attrs(self, tower):
        # Every op naming an area must agree on these attributes.
        return dict(shared_name=self.area_name(tower), capacity=0, memory_limit=0,
                    container="")

    def create(self, devices):
        """Creates the inner input; eager, once. Nothing is staged until a step."""
        self._devices = list(devices)
        self.inner.create(self._devices)
        self._prime_fn = tf.function(self._put_all, autograph=False)
        self._size_fn = tf.function(self._sizes, autograph=False)

    def start_at(self, step, total_steps=None):
        """The run resumes after global step `step` and ends at `total_steps`.

        Called with the areas empty (a new run, or after a fence)."""
        self.clear()
        self.consumed = step
        self.total_steps = total_steps
        self._fences = {f for f in self._fences if f > step}

    def add_fence(self, step):
        """The areas will be empty right after global step `step` (a save point)."""
        if step > self.consumed:
            self._fences.add(step)

    def drain(self):
        """Stages nothing more; returns the steps left until the areas are empty."""
        if self.staged:
            self._fences.add(self.consumed + self.staged)
        return self.staged

    def _limit(self):
        """The last global step the inner input may hand out a batch for."""
        ahead = [f for f in self._fences if f > self.consumed]
        if self.total_steps is not None:
            ahead.append(self.total_steps)
        return min(ahead) if ahead else None

    def _put_all(self):
        batches = self.inner.tower_batches(self._devices)
        if self._shapes is None:  # traced once per function; shapes are the same each time
            self._dtypes = [[t.dtype for t in batch] for batch in batches]
            self._shapes = [[t.shape for t in batch] for batch in batches]
        for i, (device, batch) in enumerate(zip(self._devices, batches)):
            with tf.device(device):
                tf.raw_ops.Stage(values=list(batch), **self._attrs(i))

    def _get_all(self):
        if self._dtypes is None:  # traced before any put: learn the structure by tracing one
            self._prime_fn.get_concrete_function()
        out = []
        for i, device in enumerate(self._devices):
            with tf.device(device):
                values = tf.raw_ops.Unstage(dtypes=self._dtypes[i], **self._attrs(i))
            for value, shape in zip(values, self._shapes[i]):
                value.set_shape(shape)  # Unstage knows dtypes only
            out.append(tuple(values))
        return out

    def before_step(self):
        """Eager, before each step: primes empty areas; returns whether the step puts."""
        limit = self._limit()
        if self.staged == 0:
            size = self.group if self.group > 1 else self.depth
            wanted = size if limit is None else limit - self.consumed
            # At least one: a step past the plan still needs its batch.
            for _ in range(max(1, min(size, wanted))):
                self._used = True
                self._prime_fn()
                self.staged += 1
        put = self.group == 1 and (limit is None or self.consumed + self.staged < limit)
        self.staged += (1 if put else 0) - 1
        self.consumed += 1
        return put

    def recover(self, consumed):
        """After a step failed: makes the counters agree with the areas again.

        Areas holding the same number of batches are kept; otherwise (the step
        stopped between devices' gets) they are cleared, so the next step
        primes afresh instead of blocking on an empty area."""
        self.consumed = consumed
        if not self._used:
            self.staged = 0
            return
        sizes = set(self.sizes())
        if len(sizes) == 1:
            self.staged = sizes.pop()
        else:
            self.clear()

    def tower_batches(self, devices, put=True, after_get=None):
        """Inside the step: gets each device's staged batch, then stages the next.

        Program order makes the gets precede the puts (tf.function chains
        stateful ops that hold no resource in the order they are created),
        while the compute depends only on the gets, so the next batch's fetch
        and copy overlap this step's compute. after_get(batches) runs between
        the two (it times the moment the data was there).
        """
        del devices  # fixed at create()
        batches = self._get_all()
        if after_get is not None:
            after_get(batches)
        if put:
            self._put_all()
        return batches

    def _sizes(self):
        sizes = []
        for i, device in enumerate(self._devices):
            with tf.device(device):
                sizes.append(tf.raw_ops.StageSize(dtypes=self._dtypes[i], **self._attrs(i)))
        return tf.stack(sizes)

    def sizes(self):
        """Batches now staged on each device (tests, checks)."""
        return [int(s) for s in self._size_fn().numpy()]

    def clear(self):
        """Drops whatever is staged; the areas stay usable."""
        if not self._used:  # nothing was ever staged by this instance
            self.staged = 0
            return
        for i, device in enumerate(self._devices):
            with tf.device(device):
                tf.raw_ops.StageClear(dtypes=self._dtypes[i], **self._attrs(i))
        self.staged = 0

    def close(self):
        self.clear()
        self.inner.close()
