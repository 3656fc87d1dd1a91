"""Optimizer options and gradient clipping: N towers equal serial Keras.

The pattern of test_equivalence.py: K synchronous steps on 1-4 logical CPU
devices give the weights that plain Keras gets on the whole global batch,
here with every optimizer and its non-default options, and with clipping
(--gradient_clip = Keras clipvalue, --global_norm_clip = Keras
global_clipnorm over ALL variables, once, whatever the mode).

Cost: the global-norm clip on replicated copies runs with ring in the default
suite (the clip follows the all-reduce, whichever algorithm summed; pscpu's
sum is checked in test_each_optimizer_...); pscpu runs with
TOWERTRAIN_FULL_SWEEP=1.
"""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.gpu_graph import gpu_trainer, ps_input, ps_model
from helpers.graph_walks import all_ops, data_ancestors, place, updates_by_variable
from helpers.serial_reference import STEPS, assert_close, data, tiny_model
from helpers.sweep import full_sweep_only
from towertrain import Params, Trainer
from towertrain.recipe import gradients
from towertrain.input_pipeline import from_arrays

LEARNING_RATE = 0.05

# --optimizer and its options -> the Keras optimizer serial training uses.
OPTIMIZERS = {
    "sgd": (dict(optimizer="sgd"), lambda **kw: keras.optimizers.SGD(LEARNING_RATE, **kw)),
    "momentum": (dict(optimizer="momentum", momentum=0.8),
                 lambda **kw: keras.optimizers.SGD(LEARNING_RATE, momentum=0.8, **kw)),
    "nesterov": (dict(optimizer="momentum", momentum=0.8, nesterov=True),
                 lambda **kw: keras.optimizers.SGD(LEARNING_RATE, momentum=0.8,
                                                   nesterov=True, **kw)),
    "rmsprop": (dict(optimizer="rmsprop", rmsprop_decay=0.8, rmsprop_momentum=0.5,
                     rmsprop_epsilon=0.1),
                lambda **kw: keras.optimizers.RMSprop(LEARNING_RATE, rho=0.8, momentum=0.5,
                                                      epsilon=0.1, **kw)),
    "adam": (dict(optimizer="adam", adam_beta1=0.8, adam_beta2=0.99, adam_epsilon=1e-3),
             lambda **kw: keras.optimizers.Adam(LEARNING_RATE, beta_1=0.8, beta_2=0.99,
                                                epsilon=1e-3, **kw)),
}


def serial(initial, images, labels, global_batch, optimizer, steps=STEPS):
    """(weights, [unclipped gradients of each step]) of plain Keras on whole batches."""
    model = tiny_model()
    model.set_weights(initial)
    seen = []
    for k in range(steps):
        x = images[k * global_batch:(k + 1) * global_batch]
        y = labels[k * global_batch:(k + 1) * global_batch]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
                y, model(x, training=True), from_logits=True))
        grads = tape.gradient(loss, model.trainable_variables)
        seen.append([g.numpy() for g in grads])
        optimizer.apply(grads, model.trainable_variables)
    return [v.numpy() for v in model.trainable_variables], seen


def towers(num_devices, variable_update, all_reduce, images, labels, global_batch, **flags):
    keras.utils.set_random_seed(1)
    model = tiny_model()
    initial = model.get_weights()
    flags.setdefault("init_learning_rate", LEARNING_RATE)
    params = Params(device="cpu", num_gpus=num_devices,
                    variable_update=variable_update, all_reduce_spec=all_reduce, **flags)
    trainer = Trainer(params, model=model,
                      input_source=from_arrays(images, labels, global_batch))
    for _ in range(STEPS):
        trainer.step()
    return trainer, initial


def assert_copies_bit_identical(trainer):
    copies = trainer.variables.trainable_copies()
    for copy in copies[1:]:
        for a, b in zip(copy, copies[0]):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def global_norm(grads):
    return float(np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in grads)))


# Optimizers ---------------------------------------------------------------------

# Every optimizer once; the adaptive ones (per-variable slots) in both kinds of mode.
@pytest.mark.parametrize("name,variable_update,all_reduce,num_devices", [
    ("sgd", "parameter_server", None, 3), ("momentum", "replicated", "ring", 4),
    ("nesterov", "replicated", "pscpu", 3), ("rmsprop", "parameter_server", None, 4),
    ("rmsprop", "replicated", "ring", 3), ("adam", "replicated", "ring", 4),
    ("adam", "parameter_server", None, 3)])
def test_each_optimizer_with_its_options_on_towers_equals_serial_keras(
        name, variable_update, all_reduce, num_devices):
    global_batch = 10  # uneven over 3 and 4 devices
    images, labels = data(global_batch)
    flags, keras_optimizer = OPTIMIZERS[name]
    trainer, initial = towers(num_devices, variable_update, all_reduce, images, labels,
                              global_batch, **flags)
    expected, _ = serial(initial, images, labels, global_batch, keras_optimizer())
    for copy in trainer.variables.trainable_copies():
        assert_close([v.numpy() for v in copy], expected)
    if variable_update == "replicated":
        assert_copies_bit_identical(trainer)


def test_optimizer_options_reach_the_keras_optimizers():
    params = Params(model="trivial", device="cpu", num_gpus=2, variable_update="replicated",
                    optimizer="rmsprop", rmsprop_decay=0.7, rmsprop_momentum=0.3,
                    rmsprop_epsilon=0.5)
    trainer = Trainer(params)
    for optimizer in trainer.variables.optimizers():
        assert (optimizer.rho, optimizer.momentum, optimizer.epsilon) == (0.7, 0.3, 0.5)
        assert optimizer.clipnorm is None and optimizer.clipvalue is None
        assert optimizer.global_clipnorm is None  # towertrain clips, not each optimizer
    assert dict(trainer.header_info())["Optimizer"] == (
        "rmsprop (decay 0.7, momentum 0.3, epsilon 0.5)")


# Global-norm clipping -------------------------------------------------------------

GLOBAL_NORM = 0.3  # below every step's gradient norm here: clipping acts on every step


def _check_clipping_acted(seen):
    norms = [global_norm(grads) for grads in seen]
    assert min(norms) > 1.5 * GLOBAL_NORM, norms


@pytest.mark.parametrize("all_reduce", [
    pytest.param("pscpu", marks=full_sweep_only(
        "the clip after ring's sum is the same code")),
    "ring"])
def test_global_norm_clip_on_replicated_copies_is_bit_identical_and_equals_keras(all_reduce):
    global_batch = 10
    images, labels = data(global_batch)
    trainer, initial = towers(3, "replicated", all_reduce, images, labels, global_batch,
                              optimizer="momentum", global_norm_clip=GLOBAL_NORM)
    expected, seen = serial(initial, images, labels, global_batch, keras.optimizers.SGD(
        LEARNING_RATE, momentum=0.9, global_clipnorm=GLOBAL_NORM))
    _check_clipping_acted(seen)
    assert_copies_bit_identical(trainer)
    for copy in trainer.variables.trainable_copies():
        assert_close([v.numpy() for v in copy], expected)
    unclipped, _ = serial(initial, images, labels, global_batch,
                          keras.optimizers.SGD(LEARNING_RATE, momentum=0.9))
    assert not np.allclose(unclipped[0], expected[0], rtol=1e-3)  # clipping mattered


def test_global_norm_clip_parameter_server_on_cpu_equals_keras():
    global_batch = 10
    images, labels = data(global_batch)
    trainer, initial = towers(3, "parameter_server", None, images, labels, global_batch,
                              optimizer="adam", global_norm_clip=GLOBAL_NORM)
    expected, seen = serial(initial, images, labels, global_batch, keras.optimizers.Adam(
        LEARNING_RATE, epsilon=1e-8, global_clipnorm=GLOBAL_NORM))  # towertrain's defaults
    _check_clipping_acted(seen)
    assert_close([v.numpy() for v in trainer.variables.primary_variables()[0]], expected)


def test_global_norm_clip_parameter_server_spread_over_devices_is_one_norm(monkeypatch):
    """Variables spread over 4 parameter devices (the GPU layout, on logical CPUs so
    it runs): one optimizer per device, yet ONE norm over every variable. A norm
    per device would clip each variable on its own (Keras clipnorm, not global)."""
    from towertrain import plan
    planned = plan.topology_of  # the plan's parameter device, as on GPUs
    monkeypatch.setattr(plan, "topology_of", lambda *args: dataclasses.replace(
        planned(*args), parameter_device="gpu"))
    global_batch = 8
    images, labels = data(global_batch)
    trainer, initial = towers(4, "parameter_server", None, images, labels, global_batch,
                              optimizer="sgd", global_norm_clip=GLOBAL_NORM)
    assert len(set(trainer.variables.placement)) == 4
    assert len(trainer.variables.optimizers()) == 4
    expected, seen = serial(initial, images, labels, global_batch,
                            keras.optimizers.SGD(LEARNING_RATE, global_clipnorm=GLOBAL_NORM))
    _check_clipping_acted(seen)
    assert_close([v.numpy() for v in trainer.variables.primary_variables()[0]], expected)
    per_variable, _ = serial(initial, images, labels, global_batch,
                             keras.optimizers.SGD(LEARNING_RATE, clipnorm=GLOBAL_NORM))
    assert not np.allclose(per_variable[2], expected[2], rtol=1e-3)  # the two differ here


def test_global_norm_clip_parameter_server_on_gpus_traces_one_norm_for_all_updates():
    """--device=gpu --local_parameter_device=gpu, traced: one Sqrt, on the first
    parameter device, feeds the update of every variable on every GPU."""
    trainer = gpu_trainer(ps_model(), ps_input(), variable_update="parameter_server",
                          local_parameter_device="gpu", global_norm_clip=1.0)
    graph = trainer.trace_step().graph
    trainable, _ = trainer.variables.primary_variables()
    norms = [op for op in all_ops(graph)
             if op.type == "Sqrt" and "global_norm_clip" in op.name]
    assert len(norms) == 1, [op.name for op in norms]
    assert place(norms[0]) == ("GPU", 0)
    updates = updates_by_variable(graph, trainable)
    assert sorted(updates) == list(range(len(trainable)))
    assert len({place(op) for ops in updates.values() for op in ops}) == 4  # every GPU
    for index, ops in updates.items():
        assert all(norms[0] in data_ancestors(op) for op in ops), trainable[index].path


def test_global_norm_clip_independent_clips_each_tower_on_its_own():
    global_batch, num_devices = 10, 2  # slices of 5
    images, labels = data(global_batch)
    trainer, initial = towers(num_devices, "independent", None, images, labels,
                              global_batch, optimizer="momentum",
                              global_norm_clip=GLOBAL_NORM)
    for tower, copy in enumerate(trainer.variables.trainable_copies()):
        rows = np.concatenate([np.arange(k * 10 + 5 * tower, k * 10 + 5 * tower + 5)
                               for k in range(STEPS)])
        expected, seen = serial(initial, images[rows], labels[rows], 5, keras.optimizers.SGD(
            LEARNING_RATE, momentum=0.9, global_clipnorm=GLOBAL_NORM))
        _check_clipping_acted(seen)
        assert_close([v.numpy() for v in copy], expected)


# Per-element clipping --------------------------------------------------------------

GRADIENT_CLIP = 0.02


@pytest.mark.parametrize("variable_update,all_reduce,num_devices", [
    ("replicated", "ring", 3), ("parameter_server", None, 2)])
def test_gradient_clip_per_element_equals_keras_clipvalue(variable_update, all_reduce,
                                                          num_devices):
    global_batch = 10
    images, labels = data(global_batch)
    trainer, initial = towers(num_devices, variable_update, all_reduce, images, labels,
                              global_batch, optimizer="momentum", gradient_clip=GRADIENT_CLIP)
    expected, seen = serial(initial, images, labels, global_batch, keras.optimizers.SGD(
        LEARNING_RATE, momentum=0.9, clipvalue=GRADIENT_CLIP))
    flat = np.concatenate([g.ravel() for g in seen[0]])
    assert (np.abs(flat) > GRADIENT_CLIP).any() and (np.abs(flat) < GRADIENT_CLIP).any()
    for copy in trainer.variables.trainable_copies():
        assert_close([v.numpy() for v in copy], expected)
    if variable_update == "replicated":
        assert_copies_bit_identical(trainer)


def test_clip_applies_per_element_then_the_global_norm():
    grads = [tf.constant([3.0, -0.5]), tf.constant([[-4.0], [0.25]])]
    out = gradients.clip(grads, gradient_clip=1.0, global_norm_clip=1.0)
    # Per element: [1, -0.5], [[-1], [0.25]]; norm sqrt(1 + 0.25 + 1 + 0.0625) = 1.5207.
    norm = np.sqrt(2.3125)
    np.testing.assert_allclose(out[0].numpy(), np.array([1.0, -0.5]) / norm, rtol=1e-6)
    np.testing.assert_allclose(out[1].numpy(), np.array([[-1.0], [0.25]]) / norm, rtol=1e-6)
    # Below the limit nothing changes; an overflowing norm gives zeros, never NaN.
    small = gradients.clip([tf.constant([0.3, 0.4])], global_norm_clip=1.0)
    np.testing.assert_allclose(small[0].numpy(), [0.3, 0.4], rtol=1e-6)
    huge = gradients.clip([tf.constant([3e38, 3e38])], global_norm_clip=1.0)
    assert np.all(np.isfinite(huge[0].numpy()))
    assert gradients.describe(Params(gradient_clip=0.5, global_norm_clip=2.0)) == (
        "each element to [-0.5, 0.5]; global norm 2 (of the summed gradient, once over "
        "all variables)")
