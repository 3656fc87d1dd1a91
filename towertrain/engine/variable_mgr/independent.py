"""--variable_update=independent: each device trains its own copy, no exchange.

The benchmark mode of tf_cnn_benchmarks: it measures towers with no
communication at all. Copies start equal and then drift apart.
"""
import tensorflow as tf

from towertrain.recipe import fused_update

from .base import VariableManager, assign_all, register
from .replicated import ReplicatedManager


@register("independent")
class IndependentManager(ReplicatedManager):
    synchronous = False
    exchange_sums = False  # each tower's own gradients are checked

    def __init__(self, devices, exchange, clipping=None, cluster=None):  # no all-reduce
        super(ReplicatedManager, self).__init__(devices, exchange, clipping, cluster)

    exchange = VariableManager.exchange  # nothing to exchange: each tower keeps its own

    def apply(self, tower_grads, tower_non_trainable, grad_scale=None):
        del grad_scale  # never given: only an exchange carries a half-precision transfer
        for i, device in enumerate(self.devices):
            if tower_grads[i] is None:  # no examples, nothing to learn from
                continue
            with tf.device(device):
                clipped = self.clip(tower_grads[i])
                fused_update.apply(self._optimizers[i], clipped, self._trainable[i])
                assign_all(self._non_trainable[i], tower_non_trainable[i])
