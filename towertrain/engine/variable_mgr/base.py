"""The variable-manager interface: where variables live and how updates reach them.

One subclass per --variable_update. The engine asks a manager for the values a
tower computes with, hands back every tower's gradients once per step, and
never touches variables itself, so adding a mode edits nothing else.
"""
import abc

import keras
import tensorflow as tf

from towertrain.engine.registry import Registry
from towertrain.recipe import gradients

_MODES = Registry("variable_update")
register = _MODES.register
registered_names = _MODES.names


def create(exchange, devices, clipping=None, cluster=None):
    """The manager of the plan's `exchange` section (its variable_update) for
    `devices`; clipping: the recipe's (towertrain.plan.sections.Clipping);
    cluster: the one this process joined (the plan's topology), or None for
    one process."""
    return _MODES.get(exchange.variable_update)(devices, exchange, clipping, cluster)


def _variable_name(template_variable):
    # Keras forbids '/' in names; the template's path keeps copies recognisable.
    return template_variable.path.replace("/", "__")


def new_variables(initial_values, templates, device, trainable):
    """Engine-owned copies of a model's variables, created on `device`."""
    with tf.device(device):
        # tf.identity makes a copy: keras.Variable wraps a tf.Variable it is
        # given instead of copying it, which would alias every copy.
        return [keras.Variable(tf.identity(value), dtype=t.dtype, trainable=trainable,
                               name=_variable_name(t))
                for value, t in zip(initial_values, templates)]


def read_on_current_device(variables):
    """Tensors of the variables' values, copied to the caller's device scope."""
    return [tf.identity(v.value) for v in variables]


class VariableManager(abc.ABC):
    """What the engine (towertrain.trainer, engine/step/train_step.py, engine/evaluation/evaluator.py,
    state/checkpoint.py) uses of a manager, and nothing more: everything it calls
    is declared here, with the single-process behaviour as the default.
    tests/engine/test_variable_manager_interface.py keeps the two in step."""
    name = None
    # True: towers' gradients are combined into one update, so each tower's
    # loss is divided by the global batch. False: towers train on their own.
    synchronous = True
    # True: exchange() returns the summed gradients, the same bits on every
    # device, each device's checked per pack (towertrain.engine.exchange.flow),
    # so the towers check only their losses and each copy decides alone.
    exchange_sums = False

    def __init__(self, devices, exchange, clipping=None, cluster=None):
        self.devices = list(devices)
        self.cluster = cluster
        self.options = exchange  # the plan's Exchange section (the exchange() method is the sum)
        self.clipping = clipping  # the recipe's Clipping, or None: none
        self.model = None

    def clip(self, grads):
        """The gradients clipped as --gradient_clip / --global_norm_clip ask."""
        return gradients.clip_for(self.clipping, grads)

    @abc.abstractmethod
    def create(self, model, make_optimizer):
        """Creates engine variables from `model`'s current values; eager, once.

        make_optimizer() returns a fresh keras optimizer; a manager builds one
        per group of variables that share a device so slots live beside them.
        """

    @abc.abstractmethod
    def tower_inputs(self, tower):
        """(trainable values, non-trainable values) for a tower, read under its device."""

    @abc.abstractmethod
    def apply(self, tower_grads, tower_non_trainable, grad_scale=None):
        """One update from all towers.

        tower_grads[i] is tower i's gradient list, or None when the tower had
        no examples this step. tower_non_trainable[i] likewise holds tower i's
        new non-trainable values (batch-norm moving statistics). grad_scale:
        the loss scale the gradients still carry (a half-precision transfer,
        --compact_gradient_transfer with a loss scale), divided out after the
        sum; only managers that exchange gradients are given it. Returns None,
        or a boolean tensor when the manager itself may skip the update
        (replicated with a half-precision transfer whose sum overflowed).
        """

    def exchange(self, tower_grads, tower_non_trainable=None, extra_values=None):
        """The gradient exchange, which the step runs before (outside) any
        finite-check branch, so that each pack's reduction can start while the
        backward pass still runs (a branch would wait for every gradient).
        Returns what `apply` takes as tower_grads. Default: the gradients
        unchanged (the manager combines them in `apply`). tower_non_trainable:
        each tower's new batch-norm statistics, for a mode that exchanges them
        with the gradients; extra_values: the step's scalars to sum with the packs
        (towertrain.engine.exchange.flow), for a mode whose exchange sums."""
        return tower_grads

    @abc.abstractmethod
    def primary_variables(self):
        """(trainable, non_trainable) of the canonical copy: what is saved and evaluated."""

    @abc.abstractmethod
    def optimizers(self):
        """Every optimizer the manager owns."""

    def trainable_copies(self):
        """Every copy of the trainable variables, one list per copy (tests, checks,
        checkpoints restoring into every copy). Default: the primary copy only."""
        return [self.primary_variables()[0]]

    def non_trainable_copies(self):
        """The non-trainable list paired with each of trainable_copies().
        Default: the primary one for every copy."""
        return [self.primary_variables()[1]] * len(self.trainable_copies())

    def iterations(self):
        """The number of updates applied so far."""
        return self.optimizers()[0].iterations

    def engine_variables(self):
        """{name: variable} of the manager's own state that checkpoints carry
        (one copy's; sync_engine_copies spreads it after a restore)."""
        return {}

    def sync_engine_copies(self):
        """After a restore into engine_variables(): the other copies follow."""

    def cluster_count(self, count):
        """Multi-worker in half precision: the step's example count (and stop
        requests) over every worker, before the towers. One process: itself."""
        return count

    def repack(self, exchange):
        """The exchange re-planned for `exchange`, the plan's Exchange section
        with another gradient_pack_bytes (--gradient_pack_mb=auto's
        candidates); the step function built after it uses it. Default: only
        kept (a mode without an exchange cuts no packs)."""
        self.options = exchange

    def cluster_max(self, values, site):
        """Each of `values` (a few Python numbers) at its maximum over the
        workers, every worker getting the same numbers; `site` names the
        collective (exchange.keys.KEYS). One process: the values."""
        return list(values)

    def close(self):
        """The trainer is done with its steps: release what the mode holds
        beyond its variables (nothing in one process)."""


def stats_tower(tower_non_trainable):
    """Index of the tower whose batch-norm statistics are kept: tower 0, unless
    it had no examples this step, then the first tower that had."""
    for i, values in enumerate(tower_non_trainable):
        if values is not None:
            return i
    raise ValueError("no tower had any examples this step")


def assign_all(variables, values):
    for variable, value in zip(variables, values):
        variable.assign(value)
