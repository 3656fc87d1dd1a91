"""--variable_update=replicated: a copy per device kept identical by all-reduce."""
import functools

import tensorflow as tf

from towertrain.engine import allreduce
from towertrain.engine.allreduce import packing

from .deferred import DeferredGradients
from .base import (Exchanged, VariableManager, assign_all, new_variables,
                   read_on_current_device, register, stats_tower)


@register("replicated")
class ReplicatedManager(VariableManager):
    """Every device holds the variables and optimizer slots. Gradients are summed
    by the chosen all-reduce, and each device applies the identical update to
    its own copy. Batch-norm statistics come from tower 0 and are written to
    every copy, so the copies stay bit-identical."""
    exchange_sums = True

    def __init__(self, devices, exchange, clipping=None):
        super().__init__(devices, exchange, clipping)
        self.all_reduce = self._all_reduce(exchange)

    def _all_reduce(self, exchange):
        return allreduce.create(
            exchange.all_reduce_spec or "pscpu",
            compact_dtype=exchange.compact_dtype and tf.as_dtype(exchange.compact_dtype),
            num_packs=exchange.gradient_repacking, pack_bytes=exchange.gradient_pack_bytes)

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

    def apply(self, tower_grads, tower_non_trainable, grad_scale=None):
        """grad_scale: the gradients arrive multiplied by it (the fp16 loss scale,
        kept through a half-precision transfer so small values do not flush to
        zero) and are divided after the exchange. With a half-precision transfer
        a finite gradient can still overflow in the sum: each copy then skips its
        update, and since every copy holds the same bits they all skip; the
        returned boolean says whether the update was applied."""
        summed = self._summed(tower_grads)
        source = tower_non_trainable[stats_tower(tower_non_trainable)]
        checked = self.options.compact_gradient_transfer
        applied = None
        for i, device in enumerate(self.devices):
            with tf.device(device):
                grads_i = summed[i]
                if grad_scale is not None:
                    grads_i = [g / grad_scale for g in grads_i]
                if self._deferred is not None:  # --variable_consistency=relaxed
                    grads_i = self._deferred.swap(i, grads_i)
                # Identical sums in, identical clipped gradients out, on every copy.
                clipped = self.clip(grads_i)
                update = functools.partial(self._update, i, clipped, source)
                if checked:
                    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g))
                                            for g in clipped])
                    done = tf.cond(finite, update, lambda: tf.constant(False))
                else:
                    done = update()
                applied = done if applied is None else applied
        return applied if checked else None

    def exchange(self, tower_grads, tower_non_trainable=None):
        grads = [g if g is not None else self._zeros(i) for i, g in enumerate(tower_grads)]
        with tf.name_scope("allreduce"):
            # Packing cuts one dtype at a time; --fp16_vars has float16 weights
            # beside float32 batch-norm ones.
            return Exchanged(packing.reduce_by_dtype(self.all_reduce, grads, self.devices))

    def _summed(self, tower_grads):
        """The per-device sums: exchanged by the step already, or here."""
        if not isinstance(tower_grads, Exchanged):
            tower_grads = self.exchange(tower_grads)
        return tower_grads.per_device

    def _update(self, copy, grads, non_trainable):
        self._optimizers[copy].apply(grads, self._trainable[copy])
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
