"""The learning rate by global step (towertrain.recipe.lr_schedule).

Values at chosen steps for a given global batch (warmup start, middle and
end, every piecewise boundary, decay steps, cosine end), the wiring into the
trainer (global batch, epoch length, the optimizers' own step), a resumed run
that continues the schedule at the restored step, and the flag errors.

Step convention under test: value_at(s) is the rate of the update that takes
the global step from s to s + 1; warmup gives update s the fraction (s + 1) / W.
"""
import math
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers import cifar_files
from helpers.run_handles import default_callbacks_for
from helpers.serial_reference import IMAGE_SHAPE, NUM_CLASSES, assert_close, tiny_model
from towertrain import Callback, Params, Trainer
from towertrain.recipe import lr_schedule
from towertrain.plan.learning_rate import schedule as schedule_lib
from towertrain.input_pipeline import from_arrays
from towertrain.config.params import ParamsError


def build(global_batch=128, steps_per_epoch=10, total_steps=None, base=0.1, **flags):
    return lr_schedule.build(schedule_lib.learning_rate(
        Params(**flags), base, global_batch, steps_per_epoch, total_steps=total_steps))


def assert_values(schedule, expected):
    got = {step: schedule.value_at(step) for step in expected}
    for step, value in expected.items():
        assert got[step] == pytest.approx(value, rel=1e-6), (step, got)


# Values at chosen steps ------------------------------------------------------

def test_linear_scaling_is_global_batch_over_base_batch_without_device_division():
    # 4 devices x 64 = 256 against a base of 128: x2 (tf_cnn_benchmarks would
    # also divide by the 4 devices because its towers sum; towertrain's average).
    schedule = build(global_batch=256, steps_per_epoch=None, scale_learning_rate="linear",
                     base_batch_size=128)
    assert schedule.initial_value == pytest.approx(0.2)
    assert_values(schedule, {0: 0.2, 1: 0.2, 10 ** 6: 0.2})
    assert build(global_batch=48, steps_per_epoch=None, scale_learning_rate="linear",
                 base_batch_size=128).initial_value == pytest.approx(0.0375)
    assert build(global_batch=256, steps_per_epoch=None).initial_value == pytest.approx(0.1)


def test_warmup_ramps_linearly_from_the_first_update_to_the_scaled_rate():
    # Peak 0.1 x 128/64 = 0.2; 2 epochs of 10 steps: W = 20.
    schedule = build(global_batch=128, steps_per_epoch=10, num_learning_rate_warmup_epochs=2,
                     scale_learning_rate="linear", base_batch_size=64)
    assert_values(schedule, {0: 0.2 / 20,           # start: 1/W, never a zero-rate update
                             9: 0.2 * 10 / 20,      # middle
                             18: 0.2 * 19 / 20,
                             19: 0.2,               # the W-th update: full rate
                             20: 0.2, 1000: 0.2})
    # A fractional warmup rounds down to whole steps: 0.25 x 10 -> 2 steps.
    assert_values(build(steps_per_epoch=10, num_learning_rate_warmup_epochs=0.25),
                  {0: 0.05, 1: 0.1, 2: 0.1})


def test_piecewise_switches_at_every_epoch_boundary_with_warmup_and_scaling():
    # x2 scaling; epochs of 10 steps: boundaries at steps 20 and 50; warmup 10 steps.
    schedule = build(global_batch=128, steps_per_epoch=10,
                     piecewise_learning_rate_schedule="0.1;2;0.01;5;0.001",
                     num_learning_rate_warmup_epochs=1, scale_learning_rate="linear",
                     base_batch_size=64)
    assert schedule.initial_value == pytest.approx(0.2)
    assert_values(schedule, {0: 0.02, 4: 0.1, 9: 0.2,       # warmup over the first piece
                             19: 0.2, 20: 0.02,             # epoch 2 starts at step 20
                             49: 0.02, 50: 0.002,           # epoch 5 at step 50
                             10 ** 5: 0.002})
    # Fractional epochs: 0.5 x 7 steps = 3.5 -> the boundary is step 3.
    assert_values(build(steps_per_epoch=7, piecewise_learning_rate_schedule="0.1;0.5;0.05"),
                  {2: 0.1, 3: 0.05})


def test_staircase_decay_every_n_epochs_floored_at_the_minimum():
    # 1.5 epochs x 10 steps = decays at steps 15, 30, 45 (0.1 -> 0.01 -> 0.001 -> floor).
    schedule = build(base=0.1, steps_per_epoch=10, num_epochs_per_decay=1.5,
                     learning_rate_decay_factor=0.1, minimum_learning_rate=0.0005)
    assert_values(schedule, {0: 0.1, 14: 0.1, 15: 0.01, 29: 0.01, 30: 0.001, 44: 0.001,
                             45: 0.0005, 10 ** 4: 0.0005})


def test_cosine_decays_to_the_minimum_at_the_end_of_the_run():
    schedule = build(base=0.1, steps_per_epoch=None, total_steps=100,
                     learning_rate_schedule="cosine", minimum_learning_rate=0.001)

    def cosine(step):
        return 0.001 + 0.099 * 0.5 * (1 + math.cos(math.pi * step / 100))
    assert_values(schedule, {0: 0.1, 25: cosine(25), 50: 0.0505, 99: cosine(99),
                             100: 0.001, 150: 0.001})
    # Warmup multiplies the cosine: update 4 of a 10-step warmup gets half of it.
    warm = build(base=0.1, steps_per_epoch=20, total_steps=100,
                 learning_rate_schedule="cosine", num_learning_rate_warmup_epochs=0.5)
    assert_values(warm, {4: 0.5 * 0.1 * 0.5 * (1 + math.cos(math.pi * 4 / 100)),
                         100: 0.0})


@pytest.mark.parametrize("flags,flag", [
    (dict(num_epochs_per_decay=2, learning_rate_decay_factor=0.5), "num_epochs_per_decay=2"),
    (dict(piecewise_learning_rate_schedule="0.1;3;0.01"),
     "piecewise_learning_rate_schedule=0.1;3;0.01"),
    (dict(num_learning_rate_warmup_epochs=1), "num_learning_rate_warmup_epochs=1"),
])
def test_an_epoch_based_flag_without_an_epoch_length_names_the_flag(flags, flag):
    with pytest.raises(ParamsError, match=f"^--{flag}: needs the epoch length: --data_dir, "
                       "or --num_examples_per_epoch for synthetic data$"):
        build(steps_per_epoch=None, **flags)
    # A one-piece schedule or cosine needs no epochs.
    build(steps_per_epoch=None, piecewise_learning_rate_schedule="0.3")
    build(steps_per_epoch=None, total_steps=5, learning_rate_schedule="cosine")


def test_describe_is_one_header_line():
    assert build(global_batch=256, steps_per_epoch=None, scale_learning_rate="linear",
                 base_batch_size=128).describe() == (
        "0.1 x 256/128 (linear scaling) = 0.2, constant")
    assert build(global_batch=128, steps_per_epoch=390,
                 piecewise_learning_rate_schedule="0.1;30;0.01;60;0.001",
                 num_learning_rate_warmup_epochs=5, scale_learning_rate="linear",
                 base_batch_size=64).describe() == (
        "piecewise x 128/64 (linear scaling): 0.2 until epoch 30 (step 11700), 0.02 until "
        "epoch 60 (step 23400), then 0.002; linear warmup over 5 epochs (1950 steps); "
        "epoch = 390 steps")
    assert build(steps_per_epoch=10, num_epochs_per_decay=2, learning_rate_decay_factor=0.5,
                 minimum_learning_rate=0.01).describe() == (
        "0.1; x0.5 every 2 epochs (20 steps), floor 0.01; epoch = 10 steps")
    assert build(steps_per_epoch=None, total_steps=1000, learning_rate_schedule="cosine"
                 ).describe() == "0.1; cosine to 0 at step 1000"


# Flag combinations that make no sense ----------------------------------------

@pytest.mark.parametrize("flags,message", [
    (dict(piecewise_learning_rate_schedule="0.1;2;0.01", num_epochs_per_decay=2,
          learning_rate_decay_factor=0.1),
     "--piecewise_learning_rate_schedule=0.1;2;0.01: conflicts with --num_epochs_per_decay=2"),
    (dict(piecewise_learning_rate_schedule="0.1;2;0.01", init_learning_rate=0.1),
     "--piecewise_learning_rate_schedule=0.1;2;0.01: conflicts with --init_learning_rate=0.1"),
    (dict(learning_rate_schedule="cosine", num_epochs_per_decay=2,
          learning_rate_decay_factor=0.1),
     "--learning_rate_schedule=cosine: conflicts with --num_epochs_per_decay=2"),
    (dict(piecewise_learning_rate_schedule="0.1;2"), "an odd number"),
    (dict(piecewise_learning_rate_schedule="0.1;5;0.01;3;0.001"), "increasing"),
    (dict(piecewise_learning_rate_schedule="0.1;2;0"), "every learning rate must be > 0"),
    (dict(scale_learning_rate="linear", base_batch_size=64, variable_update="independent"),
     "--scale_learning_rate=linear: conflicts with --variable_update=independent"),
    (dict(scale_learning_rate="linear"), "--scale_learning_rate=linear: needs --base_batch_size"),
])
def test_conflicting_or_malformed_schedule_flags_fail_naming_them(flags, message):
    with pytest.raises(ParamsError, match=re.escape(message)):
        Params(**flags)


def test_minimum_above_the_decaying_rate_is_an_error():
    with pytest.raises(ParamsError, match=r"^--minimum_learning_rate=0.5: above the learning "
                       r"rate it decays from \(0.1\)"):
        build(steps_per_epoch=10, num_epochs_per_decay=1, learning_rate_decay_factor=0.5,
              minimum_learning_rate=0.5)


# Wiring into the trainer ------------------------------------------------------

def test_trainer_builds_the_schedule_from_global_batch_and_examples_per_epoch():
    # 2 devices x 16 = 32 global, base 8: x4 = 0.4; 100 examples -> 4 steps an epoch.
    params = Params(model="trivial", device="cpu", num_gpus=2, batch_size=16,
                    variable_update="replicated", init_learning_rate=0.1,
                    scale_learning_rate="linear", base_batch_size=8,
                    num_learning_rate_warmup_epochs=1, num_epochs_per_decay=2,
                    learning_rate_decay_factor=0.5, num_examples_per_epoch=100)
    trainer = Trainer(params)
    assert_values(trainer.learning_rate, {0: 0.1, 3: 0.4, 7: 0.4, 8: 0.2, 16: 0.1})
    header = dict(trainer.header_info())
    assert header["Learning rate"] == (
        "0.1 x 32/8 (linear scaling) = 0.4; x0.5 every 2 epochs (8 steps); linear warmup "
        "over 1 epoch (4 steps); epoch = 4 steps (--init_learning_rate)")
    # Every optimizer runs on it, fed its own iterations (the global step).
    for optimizer in trainer.variables.optimizers():
        assert optimizer._learning_rate is trainer.learning_rate
    # Without --num_examples_per_epoch, synthetic data's epoch is its dataset's
    # (trivial's CIFAR-10: 50,000 / 32 -> 1563 steps), as tf_cnn_benchmarks.
    known = Trainer(params.replace(num_examples_per_epoch=None))
    assert dict(known.header_info())["Learning rate"] == (
        "0.1 x 32/8 (linear scaling) = 0.4; x0.5 every 2 epochs (3126 steps); linear warmup "
        "over 1 epoch (1563 steps); epoch = 1563 steps (50,000 examples: cifar10's known "
        "training size, as tf_cnn_benchmarks; the data is synthetic) (--init_learning_rate)")


def test_epochs_count_the_examples_of_data_dir(tmp_path):
    data_dir = cifar_files.write_dataset(str(tmp_path / "data"), num_train=100, num_test=8)
    params = Params(model="trivial", device="cpu", num_gpus=2, batch_size=16,
                    data_dir=data_dir, piecewise_learning_rate_schedule="0.1;1;0.01;2;0.001")
    trainer = Trainer(params)  # 100 examples / 32 -> 4 steps an epoch (the last partial)
    try:
        assert_values(trainer.learning_rate, {3: 0.1, 4: 0.01, 7: 0.01, 8: 0.001})
        with pytest.raises(ParamsError, match="^--num_examples_per_epoch=100: conflicts with "
                           "--data_dir"):
            params.replace(num_examples_per_epoch=100)
    finally:
        trainer.close()


def _reference_sgd(initial, images, labels, global_batch, rates):
    model = tiny_model()
    model.set_weights(initial)
    optimizer = keras.optimizers.SGD(rates[0])
    for k, rate in enumerate(rates):
        optimizer.learning_rate = rate
        x = images[k * global_batch:(k + 1) * global_batch]
        y = labels[k * global_batch:(k + 1) * global_batch]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
                y, model(x, training=True), from_logits=True))
        optimizer.apply(tape.gradient(loss, model.trainable_variables),
                        model.trainable_variables)
    return [v.numpy() for v in model.trainable_variables]


@pytest.mark.parametrize("variable_update,all_reduce,num_devices", [
    ("replicated", "ring", 2), ("parameter_server", None, 3)])
def test_towers_step_with_the_scheduled_rates_like_serial_keras(variable_update, all_reduce,
                                                                num_devices):
    # global 10, base 5: x2 = 0.2; 20 examples an epoch = 2 steps; warmup 1 epoch,
    # halving every epoch: updates use 0.1, 0.2, 0.1, 0.1, 0.05, 0.05.
    global_batch, rates = 10, [0.1, 0.2, 0.1, 0.1, 0.05, 0.05]
    rng = np.random.default_rng(3)
    images = rng.standard_normal((len(rates) * global_batch,) + IMAGE_SHAPE).astype(np.float32)
    labels = rng.integers(0, NUM_CLASSES, len(rates) * global_batch).astype(np.int32)
    keras.utils.set_random_seed(1)
    model = tiny_model()
    initial = model.get_weights()
    params = Params(device="cpu", num_gpus=num_devices,
                    variable_update=variable_update, all_reduce_spec=all_reduce,
                    init_learning_rate=0.1, scale_learning_rate="linear", base_batch_size=5,
                    num_learning_rate_warmup_epochs=1, num_epochs_per_decay=1,
                    learning_rate_decay_factor=0.5, num_examples_per_epoch=20)
    trainer = Trainer(params, model=model,
                      input_source=from_arrays(images, labels, global_batch))
    assert [trainer.learning_rate.value_at(s) for s in range(6)] == pytest.approx(rates)
    for _ in rates:
        trainer.step()
    expected = _reference_sgd(initial, images, labels, global_batch, rates)
    for copy in trainer.variables.trainable_copies():
        assert_close([v.numpy() for v in copy], expected)


# Resume -------------------------------------------------------------------------

class RecordRates(Callback):
    """The rate every optimizer will use for the coming step, read from Keras."""

    def __init__(self, trainer):
        self.trainer, self.rates = trainer, {}

    def before_step(self, step):
        rates = {float(o.learning_rate) for o in self.trainer.variables.optimizers()}
        assert len(rates) == 1  # every copy at the same step
        self.rates[step] = rates.pop()


def test_a_resumed_trainer_continues_the_schedule_at_the_restored_step(tmp_path):
    # global 8, base 4: x2; 80 examples = 10 steps an epoch; warmup 5 steps;
    # boundaries at steps 6 and 10. Rates of updates 0..11:
    expected = [0.04, 0.08, 0.12, 0.16, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.02, 0.02]
    common = dict(model="trivial", device="cpu", num_gpus=2, batch_size=4,
                  variable_update="replicated", optimizer="momentum", num_warmup_batches=0,
                  piecewise_learning_rate_schedule="0.1;0.6;0.05;1;0.01",
                  num_learning_rate_warmup_epochs=0.5, scale_learning_rate="linear",
                  base_batch_size=4, num_examples_per_epoch=80, display_every=100)

    def run(train_dir, num_batches):
        trainer = Trainer(Params(num_batches=num_batches, train_dir=str(train_dir), **common))
        record = RecordRates(trainer)
        trainer.train(write=lambda line: None, callbacks=[record])
        return trainer, record.rates

    first, rates = run(tmp_path / "a", 4)
    assert first.global_step() == 4
    resumed = Trainer(Params(num_batches=12, train_dir=str(tmp_path / "a"), **common))
    # Restores the latest checkpoint; its saver, never run, frees the train_dir's lock.
    for callback in default_callbacks_for(resumed, write=lambda line: None):
        if hasattr(callback, "resumed"):
            callback.close()
    assert resumed.global_step() == 4
    for optimizer in resumed.variables.optimizers():
        assert float(optimizer.learning_rate) == pytest.approx(expected[4])  # not warmup's 0.04
    record = RecordRates(resumed)
    resumed.train(write=lambda line: None, callbacks=[record])
    rates.update(record.rates)
    assert [rates[step] for step in range(1, 13)] == pytest.approx(expected, rel=1e-6)

    # The same weights as one uninterrupted run.
    whole, whole_rates = run(tmp_path / "b", 12)
    assert whole_rates == rates
    for a, b in zip(resumed.variables.primary_variables()[0],
                    whole.variables.primary_variables()[0]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
