"""What a step keeps between the micro-batches of one update
(--gradient_accumulation_steps=K, planned by towertrain.plan.accumulation).

Each device sums its towers' gradients into its own accumulators, so the
micro-batches before the last exchange nothing; the last one adds its own
gradients, and the step exchanges and applies once (engine/step/train_step.py). The
example count, loss, top-1 count and finite flag are summed on the CPU beside
them. An update always ends in the same Trainer.step call that began it, so
checkpoints, evals and stops see zeroed accumulators and never need to save
them.

Batch-norm moving statistics follow stock Keras with
`optimizer(gradient_accumulation_steps=K)`: Keras assigns a layer's new
non-trainable values after every batch's forward pass, so they move once per
micro-batch; here every micro-batch writes the same tower's values
(variable_mgr.base.stats_tower) into every local copy (no exchange), and the
update writes its last micro-batch's values as any step does.
"""
import tensorflow as tf

from towertrain.engine.variable_mgr.base import assign_all, stats_tower

# The step function's phases: the whole update in one call (K = 1), a
# micro-batch that only accumulates, and the last one that applies.
WHOLE, ACCUMULATE, APPLY = 0, 1, 2


class Accumulators:
    """Per-device gradient sums plus the update's running count, loss, top-1
    count and finite flag on the CPU; eager to create, used inside the step."""

    def __init__(self, devices, trainable):
        self.devices = list(devices)
        self.grads = []
        for i, device in enumerate(self.devices):
            with tf.device(device):
                self.grads.append([
                    tf.Variable(tf.zeros(v.shape, tf.as_dtype(v.dtype)), trainable=False,
                                name=f"grad_accumulator_{i}_{j}")
                    for j, v in enumerate(trainable)])
        with tf.device("/cpu:0"):
            self.count = tf.Variable(0, dtype=tf.int32, trainable=False)
            self.loss = tf.Variable(0.0, dtype=tf.float32, trainable=False)
            self.correct = tf.Variable(0, dtype=tf.int64, trainable=False)
            self.finite = tf.Variable(True, trainable=False)
            # The micro-batch of the update being accumulated (its random draws').
            self.micro_batch = tf.Variable(0, dtype=tf.int64, trainable=False)

    def add(self, results, count, loss, correct, finite):
        """Adds one micro-batch: results[i] is tower i's TowerResult or None.
        Returns the ops (for a timestamp taken after them)."""
        ops = []
        for i, result in enumerate(results):
            if result is None:
                continue
            with tf.device(self.devices[i]):
                for total, grad in zip(self.grads[i], result.grads):
                    ops.append(total.assign_add(grad, read_value=False))
        with tf.device("/cpu:0"):
            ops.append(self.count.assign_add(count, read_value=False))
            ops.append(self.loss.assign_add(loss, read_value=False))
            if correct is not None:
                ops.append(self.correct.assign_add(correct, read_value=False))
            ops.append(self.finite.assign(tf.logical_and(self.finite, finite),
                                          read_value=False))
            ops.append(self.micro_batch.assign_add(1, read_value=False))
        return ops

    def take(self, results, count, loss, correct, finite):
        """The update's totals with the last micro-batch added, and every
        accumulator zeroed: (per-device gradient lists, count, loss, correct or
        None, finite). A device whose tower had no examples in the last
        micro-batch still hands in what it accumulated before."""
        grads = []
        for i, result in enumerate(results):
            with tf.device(self.devices[i]):
                sums = [total.read_value() for total in self.grads[i]]
                if result is not None:
                    sums = [s + g for s, g in zip(sums, result.grads)]
                grads.append(sums)
                for total in self.grads[i]:
                    total.assign(tf.zeros_like(total))
        with tf.device("/cpu:0"):
            totals = (self.count.read_value() + count, self.loss.read_value() + loss,
                      None if correct is None else self.correct.read_value() + correct,
                      tf.logical_and(self.finite.read_value(), finite))
            self.reset_scalars()
        return (grads,) + totals

    def reset_scalars(self):
        self.count.assign(0)
        self.loss.assign(0.0)
        self.correct.assign(0)
        self.finite.assign(True)
        self.micro_batch.assign(0)

    def reset(self):
        """Eager: drops a partial update (after a step failed mid-update)."""
        for device_grads in self.grads:
            for total in device_grads:
                total.assign(tf.zeros_like(total))
        self.reset_scalars()


def keep_statistics(variables, results):
    """A micro-batch's new non-trainable values (batch-norm moving statistics,
    seed states) into every local copy, from the tower whose values an update
    keeps; no exchange."""
    values = [r.non_trainable if r is not None else None for r in results]
    source = values[stats_tower(values)]
    seen = set()
    for copy in variables.non_trainable_copies():
        if id(copy) not in seen and copy:
            seen.add(id(copy))
            assign_all(copy, source)
