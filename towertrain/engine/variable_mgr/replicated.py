"""--variable_update=replicated: a copy per device kept identical by all-reduce."""
import functools

import tensorflow as tf

from towertrain.engine import exchange as exchange_lib
from towertrain.engine.exchange import packing
from towertrain.recipe import fused_update

from .deferred import DeferredGradients
from .base import (VariableManager, assign_all, new_variables, read_on_current_device,
                   register, stats_tower)


@register("replicated")
class ReplicatedManager(VariableManager):
    """Every device holds the variables and optimizer slots. Gradients are summed
    by the chosen all-reduce, and each device applies the identical update to
    its own copy. Batch-norm statistics come from tower 0 and reach every copy
    in one transfer per device, so the copies stay bit-identical."""
    exchange_sums = True

    def __init__(self, devices, exchange, clipping=None, cluster=None):
        super().__init__(devices, exchange, clipping, cluster)
        self.all_reduce = self._all_reduce(exchange)

    def _all_reduce(self, exchange):
        return exchange_lib.local_algorithm(
            exchange.local_algorithm or "pscpu",
            compact_dtype=(exchange.compact_transfer_dtype
                           and tf.as_dtype(exchange.compact_transfer_dtype)),
            num_packs=exchange.gradient_repacking, pack_bytes=exchange.gradient_pack_bytes)

    def repack(self, exchange):
        super().repack(exchange)
        self.all_reduce = self._all_reduce(exchange)

    def create(self, model, make_optimizer):
        self.model = model
        self._trainable, self._non_trainable, self._optimizers = [], [], []
        for i, device in enumerate(self.devices):
            # Tower 0's values seed every other copy.
            source_t = ([v.value for v in model.trainable_variables] if i == 0
                        else [v.value for v in self._trainable[0]])
            source_n = ([v.value for v in model.non_trainable_variables] if i == 0
                        else [v.value for v in self._non_trainable[0]])
            trainable = new_variables(source_t, model.trainable_variables, device, True)
            non_trainable = new_variables(source_n, model.non_trainable_variables,
                                          device, False)
            with tf.device(device):
                optimizer = make_optimizer()
                optimizer.build(trainable)
            self._trainable.append(trainable)
            self._non_trainable.append(non_trainable)
            self._optimizers.append(optimizer)
        self._deferred = (DeferredGradients(self._trainable, self.devices)
                          if self.options.variable_consistency == "relaxed" else None)

    def engine_variables(self):
        if self._deferred is None:
            return {}
        return self._deferred.checkpoint_variables()

    def sync_engine_copies(self):
        if self._deferred is not None:
            self._deferred.sync_copies()

    def tower_inputs(self, tower):
        return (read_on_current_device(self._trainable[tower]),
                read_on_current_device(self._non_trainable[tower]))

    def exchange(self, tower_grads, tower_non_trainable=None, extra_values=None):
        grads = [g if g is not None else self._zeros(i) for i, g in enumerate(tower_grads)]
        with tf.name_scope("allreduce"):
            return self.all_reduce.exchange(grads, self.devices, extra_values)

    def apply(self, tower_grads, tower_non_trainable, grad_scale=None, timestamp=None):
        """One update on every copy. tower_grads: the exchange's result (or the
        towers' gradients, exchanged here). grad_scale: what the sums are still
        multiplied by (the fp16 loss scale kept through a half-precision
        transfer; with several workers, the step's examples / nominal batch),
        one value, or one per device. Where the exchange checked its sums, each
        copy applies only if its own sums are finite: the sums are the same
        bits on every device, so every copy decides alike, and no value is
        gathered to one device first. Returns whether the copies applied (read
        after the updates); with timestamp (a function of each copy's flag
        returning the time once they are all computed: the step's clock, on
        the CPU), also the time every copy's update was done. A copy's flag is
        its branch's output, computed after the branch's updates (automatic
        control dependencies)."""
        exchanged = tower_grads
        if not isinstance(exchanged, exchange_lib.Exchanged):
            exchanged = self.exchange(tower_grads)
        stats = self._statistics(tower_non_trainable, exchanged)
        applied = []
        for i, device in enumerate(self.devices):
            with tf.device(device):
                scale = grad_scale[i] if isinstance(grad_scale, (list, tuple)) else grad_scale
                # The gradients and statistics are cut from their packs inside
                # the branch: it takes a few flat tensors, not one per variable.
                update = functools.partial(self._update, i, functools.partial(
                    exchanged.gradients, i), stats[i], scale)
                allowed = exchanged.finite[i] if exchanged.finite is not None else None
                if allowed is None and timestamp is not None:
                    allowed = tf.constant(True)  # a branch's flag follows its updates
                applied.append(update() if allowed is None else
                               tf.cond(allowed, update, lambda: tf.constant(False)))
        with tf.device("/cpu:0"):
            done = tf.reduce_all(tf.stack(applied))
            if timestamp is None:
                return done
            return done, timestamp(applied)

    def _statistics(self, tower_non_trainable, exchanged):
        """Each copy's new batch-norm statistics, as a function that builds
        them where it is called: tower 0's (or the first tower with
        examples), packed per dtype on its device and copied to each other
        device in one transfer, cut there."""
        del exchanged  # one process: the towers' own values
        source = stats_tower(tower_non_trainable)
        values = tower_non_trainable[source]
        return [(lambda: values) if i == source
                else copied(values, self.devices[source], device)
                for i, device in enumerate(self.devices)]

    def _update(self, copy, make_grads, make_stats, grad_scale):
        grads, non_trainable = make_grads(), make_stats()
        if grad_scale is not None:
            grads = [g / tf.cast(grad_scale, g.dtype) for g in grads]
        if self._deferred is not None:  # --variable_consistency=relaxed
            grads = self._deferred.swap(copy, grads)
        # Identical sums in, identical clipped gradients out, on every copy.
        fused_update.apply(self._optimizers[copy], self.clip(grads), self._trainable[copy])
        assign_all(self._non_trainable[copy], non_trainable)
        return tf.constant(True)

    def _zeros(self, tower):
        with tf.device(self.devices[tower]):
            return [tf.zeros(v.shape, v.dtype) for v in self._trainable[tower]]

    def primary_variables(self):
        return self._trainable[0], self._non_trainable[0]

    def optimizers(self):
        return list(self._optimizers)

    def trainable_copies(self):
        return list(self._trainable)

    def non_trainable_copies(self):
        return list(self._non_trainable)


def copied(values, source, device):
    """`values` (tensors on `source`) on `device`: one flat transfer per
    dtype, here; returns the function that cuts them back where it is called."""
    if not values:
        return lambda: []
    packs = packing.plan(values, 0)
    with tf.device(source):
        flats = [packing.gather(values, p) for p in packs]
    with tf.device(device):
        moved = [tf.identity(flat) for flat in flats]
    return lambda: packing.scatter(moved, packs, values)
