"""N towers train exactly like serial training on the whole global batch.

For every mode and all-reduce that runs on CPU, K synchronous steps on 1-4
logical CPU devices give the weights that plain Keras gets stepping on the
whole batch, with global batches both divisible and not divisible by N.

Cost: test_towers_equal_serial_training's full grid (4 device counts x 3 modes
x 4 batch/optimizer cases, a Trainer trace each) repeats one code path per
mode many times. The default suite keeps, for every mode, the cells that
between them cover every device count, both optimizers, an even split
(12 on 4) and uneven ones (10 on 3, 7 on 4: one tower gets a single example);
the rest run with TOWERTRAIN_FULL_SWEEP=1.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.input_pipeline import from_arrays

from helpers.serial_reference import (IMAGE_SHAPE, LEARNING_RATE, NUM_CLASSES, STEPS,  # noqa: F401
                                      assert_close, data, keras_serial_steps, tiny_model)
from helpers.sweep import FULL_SWEEP, full_sweep_only







def make_optimizer(name):
    momentum = 0.9 if name == "momentum" else 0.0
    return keras.optimizers.SGD(LEARNING_RATE, momentum=momentum)


_SERIAL = {}  # the stock-Keras reference, once per distinct input (48 cells share 4)


def serial_weights(initial, images, labels, global_batch, optimizer_name):
    key = (global_batch, optimizer_name, images.tobytes(), labels.tobytes(),
           tuple(w.tobytes() for w in initial))
    if key not in _SERIAL:
        model = tiny_model()
        model.set_weights(initial)
        keras_serial_steps(model, make_optimizer(optimizer_name), images, labels,
                           global_batch, STEPS)
        _SERIAL[key] = [v.numpy() for v in model.trainable_variables]
    return [w.copy() for w in _SERIAL[key]]


def tower_trainer(num_devices, variable_update, all_reduce, optimizer_name, images, labels,
                  global_batch):
    keras.utils.set_random_seed(1)
    model = tiny_model()
    initial = model.get_weights()
    params = Params(device="cpu", num_gpus=num_devices,
                    variable_update=variable_update, all_reduce_spec=all_reduce,
                    optimizer=optimizer_name, init_learning_rate=LEARNING_RATE)
    trainer = Trainer(params, model=model,
                      input_source=from_arrays(images, labels, global_batch))
    return trainer, initial




MODES = [("parameter_server", None), ("replicated", "pscpu"), ("replicated", "ring")]
CASES = [(12, "sgd"), (10, "sgd"), (10, "momentum"), (7, "momentum")]
# (global_batch, optimizer, num_devices) run for every mode in the default suite.
REPRESENTATIVES = {(12, "sgd", 4), (10, "sgd", 1), (10, "sgd", 2), (10, "momentum", 3),
                   (7, "momentum", 4)}


def _grid():
    cells = []
    for global_batch, optimizer_name in CASES:
        for variable_update, all_reduce in MODES:
            for num_devices in [1, 2, 3, 4]:
                keep = FULL_SWEEP or (global_batch, optimizer_name,
                                      num_devices) in REPRESENTATIVES
                cells.append(pytest.param(
                    num_devices, variable_update, all_reduce, global_batch, optimizer_name,
                    id=f"{global_batch}-{optimizer_name}-{variable_update}-{all_reduce}-"
                       f"{num_devices}",
                    marks=() if keep else full_sweep_only("same code as a default cell")))
    return cells


@pytest.mark.parametrize("num_devices,variable_update,all_reduce,global_batch,optimizer_name",
                         _grid())
def test_towers_equal_serial_training(num_devices, variable_update, all_reduce,
                                      global_batch, optimizer_name):
    images, labels = data(global_batch)
    trainer, initial = tower_trainer(num_devices, variable_update, all_reduce,
                                     optimizer_name, images, labels, global_batch)
    for _ in range(STEPS):
        trainer.step()
    expected = serial_weights(initial, images, labels, global_batch, optimizer_name)
    for copy in trainer.variables.trainable_copies():
        assert_close([v.numpy() for v in copy], expected)
    if variable_update == "replicated":
        copies = trainer.variables.trainable_copies()
        assert len(copies) == num_devices
        # Real copies, one per device (not aliases of one variable).
        for device_index, copy in enumerate(copies):
            for variable in copy:
                assert variable.value.device.endswith(f"CPU:{device_index}")
        for copy in copies[1:]:
            for a, b in zip(copy, copies[0]):
                np.testing.assert_array_equal(a.numpy(), b.numpy())  # bit-identical


def test_independent_towers_each_train_on_their_own_slice():
    global_batch, num_devices = 10, 2  # slices of 5
    images, labels = data(global_batch)
    trainer, initial = tower_trainer(num_devices, "independent", None, "momentum",
                                     images, labels, global_batch)
    for _ in range(STEPS):
        trainer.step()
    for tower, copy in enumerate(trainer.variables.trainable_copies()):
        # Tower t saw rows [5t, 5t+5) of every global batch.
        rows = np.concatenate([np.arange(k * 10 + 5 * tower, k * 10 + 5 * tower + 5)
                               for k in range(STEPS)])
        expected = serial_weights(initial, images[rows], labels[rows], 5, "momentum")
        assert_close([v.numpy() for v in copy], expected)


def test_step_loss_is_the_mean_loss_over_the_global_batch():
    global_batch = 10
    images, labels = data(global_batch)
    trainer, initial = tower_trainer(3, "replicated", "ring", "sgd", images, labels,
                                     global_batch)
    model = tiny_model()
    model.set_weights(initial)
    expected = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
        labels[:global_batch], model(images[:global_batch]), from_logits=True))
    np.testing.assert_allclose(float(trainer.step()), float(expected), rtol=1e-5)


@pytest.mark.parametrize("variable_update,all_reduce", MODES)
def test_weight_decay_counts_once_over_uneven_towers(variable_update, all_reduce):
    global_batch, weight_decay = 10, 0.05  # 4, 3, 3 over 3 devices
    images, labels = data(global_batch)
    keras.utils.set_random_seed(1)
    model = tiny_model()
    initial = model.get_weights()
    params = Params(device="cpu", num_gpus=3,
                    variable_update=variable_update, all_reduce_spec=all_reduce,
                    optimizer="momentum", init_learning_rate=LEARNING_RATE,
                    weight_decay=weight_decay)
    trainer = Trainer(params, model=model,
                      input_source=from_arrays(images, labels, global_batch))
    assert trainer.decay_mask == [True, False, True, False]  # kernels, not biases
    for _ in range(STEPS):
        trainer.step()

    reference = tiny_model()
    reference.set_weights(initial)
    optimizer = make_optimizer("momentum")
    for k in range(STEPS):
        x = images[k * global_batch:(k + 1) * global_batch]
        y = labels[k * global_batch:(k + 1) * global_batch]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
                y, reference(x, training=True), from_logits=True))
            loss += weight_decay * (tf.nn.l2_loss(reference.get_layer("conv").kernel) +
                                    tf.nn.l2_loss(reference.get_layer("logits").kernel))
        optimizer.apply(tape.gradient(loss, reference.trainable_variables),
                        reference.trainable_variables)
    assert_close([v.numpy() for v in trainer.variables.primary_variables()[0]],
                 [v.numpy() for v in reference.trainable_variables])
