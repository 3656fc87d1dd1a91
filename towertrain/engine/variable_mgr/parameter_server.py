"""--variable_update=parameter_server: one copy of the variables on parameter devices.

With --local_parameter_device=cpu everything lives on /cpu:0. With gpu the
variables are spread over the GPUs, largest first onto the least-loaded one.
Towers read the values each step; each variable's gradients are summed on the
device that holds it, and one optimizer per parameter device applies them.
"""
import math

import tensorflow as tf

from towertrain.recipe import fused_update

from .base import (VariableManager, assign_all, new_variables, read_on_current_device,
                   register, stats_tower)


def spread_greedy(sizes, devices):
    """Device index per variable: largest first onto the least-loaded device."""
    load = [0] * len(devices)
    placement = [0] * len(sizes)
    for index in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        target = min(range(len(devices)), key=lambda d: (load[d], d))
        placement[index] = target
        load[target] += sizes[index]
    return placement


@register("parameter_server")
class ParameterServerManager(VariableManager):
    def create(self, model, make_optimizer):
        self.model = model
        if self.options.parameter_device == "cpu":
            self.parameter_devices = ["/cpu:0"]
        else:
            self.parameter_devices = list(self.devices)
        trainable_templates = model.trainable_variables
        placement = spread_greedy([math.prod(v.shape) for v in trainable_templates],
                                  self.parameter_devices)
        self._trainable = [
            new_variables([t.value], [t], self.parameter_devices[d], True)[0]
            for t, d in zip(trainable_templates, placement)]
        # Non-trainable state is small and read by every tower: keep it with
        # the first parameter device.
        self._non_trainable = new_variables(
            [v.value for v in model.non_trainable_variables], model.non_trainable_variables,
            self.parameter_devices[0], False)
        self._groups = []  # (device, variable indices, optimizer)
        for d, device in enumerate(self.parameter_devices):
            indices = [i for i, p in enumerate(placement) if p == d]
            if not indices:
                continue
            with tf.device(device):
                optimizer = make_optimizer()
                optimizer.build([self._trainable[i] for i in indices])
            self._groups.append((device, indices, optimizer))
        self.placement = [self.parameter_devices[d] for d in placement]

    def tower_inputs(self, tower):
        return (read_on_current_device(self._trainable),
                read_on_current_device(self._non_trainable))

    def apply(self, tower_grads, tower_non_trainable, grad_scale=None):
        del grad_scale  # never given: only an exchange carries a half-precision transfer
        present = [g for g in tower_grads if g is not None]
        summed = [None] * len(self._trainable)
        for device, indices, _ in self._groups:
            with tf.device(device), tf.name_scope("aggregate"):
                for i in indices:
                    summed[i] = tf.add_n([grads[i] for grads in present])
        # Clipping sees the whole gradient: one global norm over every
        # variable, whichever parameter device holds it.
        with tf.device(self.parameter_devices[0]):
            summed = self.clip(summed)
        for device, indices, optimizer in self._groups:
            with tf.device(device):
                fused_update.apply(optimizer, [summed[i] for i in indices],
                                   [self._trainable[i] for i in indices])
        with tf.device(self.parameter_devices[0]):
            assign_all(self._non_trainable,
                       tower_non_trainable[stats_tower(tower_non_trainable)])

    def primary_variables(self):
        return self._trainable, self._non_trainable

    def optimizers(self):
        return [optimizer for _, _, optimizer in self._groups]
