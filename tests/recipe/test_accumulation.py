"""--gradient_accumulation_steps=K: an update is one step on the concatenation
of its K global batches (a partial last batch included), and with full
batches it is stock Keras' `optimizer(gradient_accumulation_steps=K)`."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.callbacks import Callback
from towertrain.input_pipeline import from_arrays
from towertrain.plan.accumulation import AccumulationPlan

from helpers import graph_walks
from helpers.cli import quiet
from helpers.serial_reference import IMAGE_SHAPE, NUM_CLASSES, assert_close, tiny_model

LEARNING_RATE = 0.1
WEIGHT_DECAY = 0.01


class StepLog(Callback):
    """The examples and learning rate of every step the loop runs."""

    def __init__(self):
        self.examples, self.rates = [], []

    def after_step(self, step, result, seconds):
        self.examples.append(result.examples)
        self.rates.append(self.loop.handles.learning_rate.value_at(step - 1))


def examples(count, seed=3):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((count,) + IMAGE_SHAPE).astype(np.float32),
            rng.integers(0, NUM_CLASSES, count).astype(np.int32))


def concatenated_steps(initial, images, labels, sizes, decay_mask):
    """The independent reference: stock Keras, one step per update on the
    concatenation of its batches (`sizes`: examples per update, in order, over
    the data repeated), mean cross-entropy plus L2 on the decayed kernels."""
    model = tiny_model()
    model.set_weights(initial)
    optimizer = keras.optimizers.SGD(LEARNING_RATE, momentum=0.9)
    start = 0
    for size in sizes:
        index = np.arange(start, start + size) % len(images)
        start += size
        with tf.GradientTape() as tape:
            logits = model(images[index], training=True)
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
                labels[index], logits, from_logits=True))
            loss += WEIGHT_DECAY * tf.add_n([tf.nn.l2_loss(v) for v, decay in zip(
                model.trainable_variables, decay_mask) if decay])
        optimizer.apply(tape.gradient(loss, model.trainable_variables),
                        model.trainable_variables)
    return [v.numpy() for v in model.trainable_variables]


# 22 examples in global batches of 4: 6 batches an epoch, the last of 2 (on 4
# towers two towers get nothing). K=4: updates of 4 + 2 batches = 16 and 6
# examples; K=3: 3 + 3 = 12 and 10 (a full and a partial batch after 2 full).
@pytest.mark.parametrize("num_devices,variable_update,steps", [
    (1, "replicated", 4), (2, "replicated", 3), (4, "replicated", 4),
    (4, "parameter_server", 3)])
def test_update_equals_one_step_on_its_batches_concatenated(num_devices, variable_update,
                                                             steps):
    images, labels = examples(22)
    keras.utils.set_random_seed(1)
    model = tiny_model()
    initial = model.get_weights()
    params = Params(device="cpu", num_gpus=num_devices,
                    variable_update=variable_update, optimizer="momentum",
                    init_learning_rate=LEARNING_RATE, weight_decay=WEIGHT_DECAY,
                    num_epochs=2, num_warmup_batches=0, gradient_accumulation_steps=steps,
                    staging_depth=1 if num_devices == 2 else 0)  # staged or not: the same
    trainer = Trainer(params, model=model,
                      input_source=from_arrays(images, labels, 4, num_epochs=2))
    log = StepLog()
    trainer.train(write=quiet, callbacks=[log])
    sizes = [16, 6] * 2 if steps == 4 else [12, 10] * 2
    assert log.examples == sizes  # a step counts every micro-batch's examples
    expected = concatenated_steps(initial, images, labels, sizes, trainer.decay_mask)
    for copy in trainer.variables.trainable_copies():
        assert_close([v.numpy() for v in copy], expected)


def bn_model():
    return keras.Sequential([
        keras.Input(IMAGE_SHAPE),
        keras.layers.Conv2D(3, 3, name="conv"),
        keras.layers.BatchNormalization(name="bn"),
        keras.layers.Activation("relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(NUM_CLASSES, name="logits"),
    ])


@pytest.mark.parametrize("num_devices,sync", [(1, False), (2, True)])
def test_full_batches_equal_stock_keras_gradient_accumulation(num_devices, sync):
    """Keras fit with SGD(gradient_accumulation_steps=3) on the same batches:
    the same weights, and the same batch-norm moving statistics (Keras moves
    them every batch, not every update). Two towers need --sync_batch_norm to
    see the whole batch's statistics, as Keras does."""
    steps, global_batch, updates = 3, 6, 3
    images, labels = examples(steps * global_batch * updates, seed=5)
    keras.utils.set_random_seed(2)
    model = bn_model()
    initial = [w.copy() for w in model.get_weights()]
    reference = bn_model()
    reference.set_weights(initial)
    reference.compile(optimizer=keras.optimizers.SGD(
        LEARNING_RATE, momentum=0.9, gradient_accumulation_steps=steps),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    reference.fit(images, labels, batch_size=global_batch, epochs=1, shuffle=False, verbose=0)

    params = Params(device="cpu", num_gpus=num_devices,
                    variable_update="replicated", optimizer="momentum",
                    init_learning_rate=LEARNING_RATE, num_batches=updates,
                    num_warmup_batches=0, gradient_accumulation_steps=steps,
                    sync_batch_norm=sync, staging_depth=0)
    trainer = Trainer(params, model=model, input_source=from_arrays(
        images, labels, global_batch, repeat=False))
    trainer.train(write=quiet)
    assert trainer.global_step() == updates
    assert int(reference.optimizer.iterations) == updates
    def by_layer(model):  # paths without the model's own (numbered) name
        return {v.path.split("/", 1)[1]: v.numpy() for v in model.weights}
    got, want = by_layer(trainer.model), by_layer(reference)
    assert sorted(got) == sorted(want)
    for name in want:  # atol: the conv bias only gathers rounding noise ahead of BN
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
    # Not trivially equal: the statistics moved on each of the 9 batches.
    moving_mean = want[[k for k in want if "moving_mean" in k][0]]
    assert np.abs(moving_mean).max() > 1e-3


def test_schedule_counts_updates():
    """A piecewise boundary at epoch 1 is an update count: 22 examples in
    batches of 4 are 6 batches, 2 updates of K=4 an epoch, so the rate
    changes at the third update; the warmup ramps over updates too."""
    images, labels = examples(22)
    params = Params(device="cpu", num_gpus=2, variable_update="replicated",
                    piecewise_learning_rate_schedule="0.1;1;0.01", num_epochs=2,
                    num_warmup_batches=0, gradient_accumulation_steps=4, staging_depth=0)
    trainer = Trainer(params, model=tiny_model(),
                      input_source=from_arrays(images, labels, 4, num_epochs=2))
    log = StepLog()
    trainer.train(write=quiet, callbacks=[log])
    assert trainer.learning_rate.boundaries == [2]
    assert log.rates == pytest.approx([0.1, 0.1, 0.01, 0.01])
    assert trainer.global_step() == 4
    assert int(trainer.variables.optimizers()[0].iterations) == 4


def test_plan_splits_epochs_into_updates():
    plan = AccumulationPlan(steps=4, batches_per_epoch=10)
    assert plan.updates_per_epoch == 3
    assert [plan.micro_batches(s) for s in range(6)] == [4, 4, 2, 4, 4, 2]
    assert [plan.batches_before(s) for s in range(7)] == [0, 4, 8, 10, 14, 18, 20]
    assert [plan.first_update_at_or_after(b) for b in (0, 1, 4, 9, 10, 11)] == [
        0, 1, 1, 3, 3, 4]
    unbounded = AccumulationPlan(steps=3)
    assert unbounded.micro_batches(7) == 3 and unbounded.batches_before(5) == 15
    assert unbounded.first_update_at_or_after(7) == 3


@pytest.mark.parametrize("flags,message", [
    (dict(gradient_accumulation_steps=0), "--gradient_accumulation_steps=0: must be >= 1"),
    (dict(gradient_accumulation_steps=2, variable_update="independent"),
     "--gradient_accumulation_steps=2: conflicts with --variable_update=independent"),
])
def test_refused_combinations_name_the_flags(flags, message):
    from towertrain.errors import ParamsError
    with pytest.raises(ParamsError) as raised:
        Params(model="trivial", device="cpu", **flags)
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_micro_batches_before_the_last_exchange_nothing():
    """Graph and state: the accumulating micro-batch holds no all-reduce, leaves
    the variables and the step as they were and only fills the accumulators;
    the last micro-batch all-reduces and applies."""
    from towertrain.engine.step import accumulate
    images, labels = examples(16)
    params = Params(device="cpu", num_gpus=2, variable_update="replicated",
                    all_reduce_spec="pscpu", optimizer="momentum", num_batches=2,
                    num_warmup_batches=0, gradient_accumulation_steps=2, staging_depth=0)
    trainer = Trainer(params, model=tiny_model(),
                      input_source=from_arrays(images, labels, 4))

    def op_names(phase):
        return [op.name for op in graph_walks.all_ops(trainer.trace_step(phase).graph)]
    accumulating, applying = op_names(accumulate.ACCUMULATE), op_names(accumulate.APPLY)
    assert any("allreduce" in name for name in applying)
    assert not any("allreduce" in name for name in accumulating)

    before = [[v.numpy() for v in copy] for copy in trainer.variables.trainable_copies()]
    trainer._step_fn(True, 0, accumulate.ACCUMULATE)
    after = [[v.numpy() for v in copy] for copy in trainer.variables.trainable_copies()]
    for old, new in zip(before, after):
        for a, b in zip(old, new):
            np.testing.assert_array_equal(a, b)
    assert trainer.global_step() == 0
    assert all(np.abs(g.numpy()).max() > 0 for device in trainer.accumulators.grads
               for g in device)
