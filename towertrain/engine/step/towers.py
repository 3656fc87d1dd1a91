"""The step's first half: every tower's forward and backward pass on its
slice, under its device (tensorpack's towers, before exchange-and-apply).

Each tower reads its copy of the variables from the variable manager, with
its seed-generator states set for this step and its slot (engine/step/tower.py:
random draws are a function of seed, step and global tower), and hands back a
TowerResult; with --sync_batch_norm the towers are traced in lockstep so
batch norm sees the whole global batch (engine/step/lockstep.py).
"""
import functools

import tensorflow as tf

from towertrain.engine.step import lockstep, tower
from towertrain.recipe import l2_loss


def _empty_tower(trainable, non_trainable, count_correct):
    """What a tower with no examples contributes: nothing (zero loss and
    gradients, batch-norm statistics passed through unchanged)."""
    return tower.TowerResult(tf.constant(0.0), [tf.zeros_like(v) for v in trainable],
                             [tf.identity(v) for v in non_trainable],
                             tf.constant(0, tf.int64) if count_correct else None)


def _at_least_one_example(images):
    """(images, examples, present) for a tower traced in lockstep: a slice
    whose size is only known at run time gets one zero example there when it
    is empty (a tf.cond: a non-empty slice is passed on uncopied); `examples`
    is its real size (the outputs to keep), `present` 1.0, or 0.0 for an empty
    slice. A slice of static size: unchanged, examples and present None."""
    flat = tf.nest.flatten(images)
    if flat[0].shape[0] is not None:
        return images, None, None
    examples = tf.shape(flat[0])[0]

    def one_zero_example():
        return tf.nest.map_structure(
            lambda t: tf.zeros(tf.concat([[1], tf.shape(t)[1:]], 0), t.dtype), images)
    padded = tf.cond(examples > 0, lambda: images, one_zero_example)
    padded = tf.nest.map_structure(lambda p, t: tf.ensure_shape(p, t.shape), padded, images)
    return padded, examples, tf.cast(examples > 0, tf.float32)


class Towers:
    """model on `devices` with the copies `variables` (a variable manager)
    hands out. loss_fn(labels, logits) per example; decay_mask: which
    trainable variables get weight decay; loss: the recipe's Loss section;
    lockstep: --sync_batch_norm; xla_compile: each tower as one XLA cluster;
    tower_indices: each tower's index among the cluster's (random streams;
    default 0..n-1); cluster_towers: the towers of the whole cluster (default:
    these); seed: the run's seed (--tf_random_seed); unscale: the towers
    divide their gradients by the loss scale (not when a half-precision
    transfer carries them scaled); across: with lockstep over several
    workers, the sum over workers of a cross-tower point (lockstep.Lockstep)."""

    def __init__(self, model, devices, variables, loss_fn, decay_mask, loss, lockstep=False,
                 xla_compile=False, tower_indices=None, unscale=True, cluster_towers=None,
                 seed=0, across=None):
        self.model, self.devices, self.variables = model, list(devices), variables
        self.loss_fn, self.decay_mask = loss_fn, decay_mask
        self.weight_decay = loss.weight_decay
        self.loss_options = l2_loss.from_plan(loss)  # decay op, reported loss
        self.lockstep = lockstep
        self.across = across
        self.unscale = unscale
        self.tower_indices = (tuple(tower_indices) if tower_indices is not None
                              else tuple(range(len(self.devices))))
        self.cluster_towers = cluster_towers or len(self.devices)
        self.seed = seed
        self.seed_states = tower.seed_state_indices(model)
        self.count_correct = tower.is_classifier(model)
        self.compute_tower = tower.compute_tower
        if xla_compile:
            # Each tower's forward and backward as one XLA cluster on its device;
            # the exchange and the update stay outside (they cross devices).
            self.compute_tower = tf.function(tower.compute_tower, jit_compile=True, autograph=False)

    def compute(self, batches, denominator, loss_scale, step=0, micro_batch=0,
                check_gradients=True):
        """(results, finite): each tower's TowerResult (None for a statically
        empty slice) and, for each computed one, whether its loss and
        (check_gradients) gradients are finite. step, micro_batch (tensors
        or ints): where in the run the draws are (the updates applied so far;
        the micro-batch of the update under --gradient_accumulation_steps)."""
        draw = (step, micro_batch)
        # A statically empty slice (fewer examples than towers) computes nothing.
        active = [i for i, (images, _) in enumerate(batches) if images.shape[0] != 0]
        # Across workers every worker's towers meet, however few are here.
        if self.lockstep and (len(active) > 1 or (self.across is not None and active)):
            computed = self._towers_in_lockstep(active, batches, denominator, loss_scale,
                                                draw)
        else:
            computed = {i: self._tower(i, *batches[i], denominator, loss_scale, draw)
                        for i in active}
        results, finite = [], []
        for i, device in enumerate(self.devices):
            result = computed.get(i)
            if result is not None:
                with tf.device(device):
                    finite.append(tower.all_finite(result, check_gradients))
            results.append(result)
        return results, finite

    def _tower_values(self, i, draw):
        """Tower i's (trainable, non-trainable) values, read on the current
        device, with its seed states set for this step and its slot."""
        trainable, non_trainable = self.variables.tower_inputs(i)
        if not self.seed_states:
            return trainable, non_trainable
        step, micro_batch = draw
        slot = (tf.cast(micro_batch, tf.int64) * self.cluster_towers
                + self.tower_indices[i])
        key = tower.draw_key(self.seed, step, slot)
        return trainable, tower.seeded_states(non_trainable, self.seed_states, key)

    def _tower(self, i, images, labels, global_count, loss_scale, draw):
        """Tower i's TowerResult, computed on its own."""
        with tf.device(self.devices[i]), tf.name_scope(f"tower_{i}"):
            trainable, non_trainable = self._tower_values(i, draw)
            denominator = global_count if self.variables.synchronous else tf.shape(images)[0]
            compute = functools.partial(
                self.compute_tower, self.model, trainable, non_trainable, images,
                labels, denominator, self.loss_fn, self.weight_decay,
                self.decay_mask, loss_scale, self.count_correct, self.unscale,
                loss_options=self.loss_options)
            if images.shape[0] is None:
                # A dynamic slice (the last partial batch) may be empty at run
                # time: the guard gives zero gradients and unchanged batch-norm
                # statistics instead of NaN stats from a 0-example batch.
                return tf.cond(tf.shape(images)[0] > 0, compute, functools.partial(
                    _empty_tower, trainable, non_trainable, self.count_correct))
            return compute()

    def _towers_in_lockstep(self, active, batches, global_count, loss_scale, draw):
        """{i: TowerResult} of the active towers traced together, so batch-norm
        layers normalize with the statistics of the whole global batch
        (--sync_batch_norm). A slice that may be empty at run time is given
        one zero example there (_at_least_one_example), weighed zero in the
        shared sums and cut from the outputs: every tower must reach every
        cross-tower point, and TensorFlow's oneDNN Conv2D passes an empty batch
        through unchanged (the wrong shape downstream) and cannot
        differentiate it."""
        def forward(i):
            images, labels = batches[i]

            def run():
                with tf.device(self.devices[i]), tf.name_scope(f"tower_{i}"):
                    padded, examples, present = _at_least_one_example(images)
                    if present is not None:
                        lockstep.current().present = present
                    trainable, non_trainable = self._tower_values(i, draw)
                    return trainable, labels, tower.forward(
                        self.model, trainable, non_trainable, padded, labels, global_count,
                        self.loss_fn, self.weight_decay, self.decay_mask, loss_scale,
                        self.loss_options, examples=examples)
            return run

        results = tower.compute_towers_in_lockstep(
            [forward(i) for i in active], self.devices[active[0]], loss_scale,
            self.count_correct, self.unscale, self.across)
        return dict(zip(active, results))
