"""Per-device StagingArea double buffer in front of any input.

    staged = StagedInput(inner_input, depth=1)
    staged.create(devices, total_steps=None)   # eager: creates inner, primes depth batches
    batches = staged.tower_batches(devices)    # inside the step: get, then put the next

Each device owns one area (tf.raw_ops.Stage/Unstage with a fixed shared_name,
created under that device inside tf.function; the `StagingArea` object cannot
be used inside tf.function, see DESIGN.md). The step computes on the batch
staged by the previous step while the put fetches, slices and copies the next
one; on a GPU the put is the host-to-device copy, so it overlaps compute.

Accounting: `put` is decided in Python from the number of batches fetched so
far against the run's planned total, so with finite data the last `depth`
steps only drain: nothing is left behind, nothing is read twice, and the
iterator is never asked for a batch past the end. A step beyond the plan
stages a batch first, so an Unstage never blocks on an empty area.
"""
import itertools

import tensorflow as tf

_instances = itertools.count()


class StagedInput:
    """Wraps an input (create/tower_batches) with one staging area per device."""

    def __init__(self, inner, depth=1):
        if depth < 1:
            raise ValueError(f"staging depth must be >= 1, got {depth}")
        self.inner = inner
        self.depth = depth
        self._prefix = f"towertrain_staging_{next(_instances)}"
        self._devices = None
        self._dtypes = None
        self._shapes = None  # per device, per tensor: static shapes of a staged batch
        self._prime_fn = None
        self._primed = False
        self._size_fn = None
        self.staged = 0  # batches now in each area
        self.fetched = 0  # batches taken from the inner input so far
        self.total_steps = None

    # Forwarded so the engine can ask the staged input what it would ask the inner one.
    def __getattr__(self, name):
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def name(self):
        return f"{getattr(self.inner, 'name', type(self.inner).__name__)}, staged"

    def area_name(self, tower):
        return f"{self._prefix}_{tower}"

    def _attrs(self, tower):
        # Every op naming an area must agree on these attributes.
        return dict(shared_name=self.area_name(tower), capacity=0, memory_limit=0,
                    container="")

    def create(self, devices, total_steps=None):
        """Creates the inner input and primes each area; eager, once.

        total_steps: batches the run will consume (None: unbounded).
        """
        self._devices = list(devices)
        self.total_steps = total_steps
        self.inner.create(self._devices)
        self._prime_fn = tf.function(self._put_all)
        self._size_fn = tf.function(self._sizes)
        self._primed = False  # primed by the first before_step, so tracing alone runs nothing

    def prime(self):
        """Stages the first `depth` batches on every device (eager)."""
        self.clear()
        for _ in range(self._puts_allowed(self.depth)):
            self._prime_fn()
            self.staged += 1
            self.fetched += 1
        self._primed = True

    def _puts_allowed(self, wanted):
        if self.total_steps is None:
            return wanted
        return max(0, min(wanted, self.total_steps - self.fetched))

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
        """Eager, before each step: returns whether this step puts a batch."""
        if not self._primed:
            self.prime()
        if self.staged == 0:  # past the plan: stage one first so the get cannot block
            self._prime_fn()
            self.staged += 1
            self.fetched += 1
        put = self._puts_allowed(1) == 1
        self.staged += (1 if put else 0) - 1
        self.fetched += 1 if put else 0
        return put

    def tower_batches(self, devices, put=True):
        """Inside the step: gets each device's staged batch, then stages the next.

        Program order makes the gets precede the puts (stateful ops that hold
        no resource are chained in order by tf.function's automatic control
        dependencies), while the compute depends only on the gets, so the next
        batch's fetch and copy overlap this step's compute.
        """
        del devices  # fixed at create()
        batches = self._get_all()
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
        """Drops whatever is staged (start, early exit); the areas stay usable."""
        if not self._primed:  # nothing was ever staged by this instance
            return
        for i, device in enumerate(self._devices):
            with tf.device(device):
                tf.raw_ops.StageClear(dtypes=self._dtypes[i], **self._attrs(i))
        self.staged = 0

    close = clear
