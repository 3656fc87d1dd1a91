"""--gradient_accumulation_steps=K with the recipe features that count or act
on UPDATES, not micro-batches: clipping (of the update's mean gradient, once),
fp16 loss scaling (the dynamic scale's cadence, the skip of a non-finite
update), --scale_learning_rate=linear with warmup. With collective_all_reduce
across worker processes: tests/engine/test_multiworker.py (its shared launch)."""
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.callbacks import Callback
from towertrain.input_pipeline import from_arrays

from helpers.cli import quiet
from helpers.serial_reference import IMAGE_SHAPE, NUM_CLASSES, assert_close, tiny_model

LEARNING_RATE = 0.1
# 22 examples in global batches of 4: 6 batches an epoch, the last of 2.
NUM_EXAMPLES, GLOBAL_BATCH = 22, 4


class RateLog(Callback):
    """The rate the schedule gives each update the loop runs."""

    def __init__(self):
        self.rates = []

    def after_step(self, step, result, seconds):
        self.rates.append(self.loop.handles.learning_rate.value_at(step - 1))


def examples(count=NUM_EXAMPLES, seed=11):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((count,) + IMAGE_SHAPE).astype(np.float32),
            rng.integers(0, NUM_CLASSES, count).astype(np.int32))


def update_sizes(steps, epochs=1):
    """Examples per update: K batches of 4, an epoch's last update the rest."""
    per_epoch, sizes = NUM_EXAMPLES, []
    while per_epoch > 0:
        sizes.append(min(steps * GLOBAL_BATCH, per_epoch))
        per_epoch -= sizes[-1]
    return sizes * epochs


def _clip(grads, gradient_clip, global_norm_clip):
    if gradient_clip is not None:
        grads = [tf.clip_by_value(g, -gradient_clip, gradient_clip) for g in grads]
    if global_norm_clip is not None:
        grads, _ = tf.clip_by_global_norm(grads, global_norm_clip)
    return grads


def reference_steps(initial, images, labels, sizes, rates, momentum=0.9, gradient_clip=None,
                    global_norm_clip=None, micro_batch=None):
    """The independent reference: stock Keras, one step per update on the
    concatenation of its batches (mean cross-entropy), the gradient clipped
    with tf.clip_by_value / tf.clip_by_global_norm, at the given rates.
    micro_batch=B instead clips each B-example piece's mean gradient and
    averages them (weighted by examples): the wrong answer a per-micro-batch
    clip gives, to show the clip bites differently."""
    model = tiny_model()
    model.set_weights(initial)
    optimizer = keras.optimizers.SGD(rates[0], momentum=momentum)
    start, bit = 0, []
    for size, rate in zip(sizes, rates):
        index = np.arange(start, start + size) % len(images)
        start += size
        pieces = [index] if micro_batch is None else [
            index[i:i + micro_batch] for i in range(0, size, micro_batch)]
        total = None
        for piece in pieces:
            with tf.GradientTape() as tape:
                logits = model(images[piece], training=True)
                loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
                    labels[piece], logits, from_logits=True))
            raw = tape.gradient(loss, model.trainable_variables)
            clipped = _clip(raw, gradient_clip, global_norm_clip)
            bit.append(any(not np.allclose(a, b) for a, b in zip(raw, clipped)))
            part = [g * (len(piece) / size) for g in clipped]
            total = part if total is None else [t + p for t, p in zip(total, part)]
        optimizer.learning_rate = rate
        optimizer.apply(total, model.trainable_variables)
    clipping = gradient_clip is not None or global_norm_clip is not None
    assert micro_batch is not None or not clipping or all(bit), "the clip must bite"
    return [v.numpy() for v in model.trainable_variables]


def trained_copies(trainer):
    return [[v.numpy() for v in copy] for copy in trainer.variables.trainable_copies()]


def train_tiny(seed, images, labels, num_epochs=1, callbacks=(), **flags):
    """Trains the tiny model (initial weights from `seed`) through a Trainer
    on the arrays; returns (trainer, initial weights)."""
    keras.utils.set_random_seed(seed)
    model = tiny_model()
    initial = model.get_weights()
    params = Params(device="cpu", init_learning_rate=LEARNING_RATE,
                    num_epochs=num_epochs, num_warmup_batches=0, staging_depth=0, **flags)
    trainer = Trainer(params, model=model, input_source=from_arrays(
        images, labels, GLOBAL_BATCH, num_epochs=num_epochs))
    trainer.train(write=quiet, callbacks=list(callbacks))
    return trainer, initial


# K=3 on one device (updates of 12 and 10 examples: the partial last batch is
# rescaled before the clip), K=2 on two towers (8, 8, 6) through the
# parameter server's clip of the full list of sums, both clips in turn.
@pytest.mark.parametrize("num_devices,variable_update,steps,clip", [
    (1, "replicated", 3, dict(gradient_clip=0.05)),
    (2, "parameter_server", 2, dict(gradient_clip=0.1, global_norm_clip=0.15))])
def test_clip_acts_once_on_the_updates_mean_gradient(num_devices, variable_update, steps,
                                                      clip):
    images, labels = examples()
    trainer, initial = train_tiny(3, images, labels, num_gpus=num_devices,
                                  variable_update=variable_update, optimizer="momentum",
                                  gradient_accumulation_steps=steps, **clip)
    sizes = update_sizes(steps)
    assert trainer.global_step() == len(sizes)
    rates = [LEARNING_RATE] * len(sizes)
    expected = reference_steps(initial, images, labels, sizes, rates, **clip)
    for copy in trained_copies(trainer):
        assert_close(copy, expected)
    # Clipping each micro-batch instead lands measurably elsewhere.
    per_micro_batch = reference_steps(initial, images, labels, sizes, rates,
                                      micro_batch=GLOBAL_BATCH, **clip)
    assert max(np.abs(a - b).max() for a, b in zip(per_micro_batch, expected)) > 1e-3


def test_compact_transfer_exchanges_the_updates_sum_in_half_precision():
    """K=2 on 3 ring towers with --compact_gradient_transfer: the update's
    accumulated gradient crosses in float16 (within its tolerance of the
    float32 reference, and not bit-equal to it: the cast really happened),
    and every copy applies the same update (bit-identical)."""
    images, labels = examples()
    trainer, initial = train_tiny(6, images, labels, num_gpus=3, variable_update="replicated",
                                  all_reduce_spec="ring", compact_gradient_transfer=True,
                                  optimizer="momentum", gradient_accumulation_steps=2)
    sizes = update_sizes(2)
    assert trainer.global_step() == len(sizes) == 3
    expected = reference_steps(initial, images, labels, sizes, [LEARNING_RATE] * len(sizes))
    copies = trained_copies(trainer)
    for copy in copies[1:]:
        for a, b in zip(copy, copies[0]):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(copies[0], expected):
        np.testing.assert_allclose(a, b, rtol=1e-2, atol=5e-3)
    assert max(np.abs(a - b).max() for a, b in zip(copies[0], expected)) > 1e-7


def test_linear_scaling_and_warmup_count_updates():
    """Rate = base x (global batch x K) / --base_batch_size, and a warmup of one
    epoch ramps over the epoch's 2 updates (not its 6 batches): K=3, global
    batch 4, base batch 6 -> x2; warmup (s + 1) / 2. Checked on the schedule's
    values and on the weights plain SGD reaches with them."""
    images, labels = examples()
    log = RateLog()
    trainer, initial = train_tiny(4, images, labels, num_epochs=2, callbacks=[log], num_gpus=2,
                                  variable_update="replicated", optimizer="sgd",
                                  scale_learning_rate="linear", base_batch_size=6,
                                  num_learning_rate_warmup_epochs=1,
                                  gradient_accumulation_steps=3)
    scaled = LEARNING_RATE * (GLOBAL_BATCH * 3) / 6
    rates = [scaled * min(1.0, (s + 1) / 2) for s in range(4)]
    assert log.rates == pytest.approx(rates, rel=1e-6)
    assert "x 12/6 (linear scaling)" in trainer.learning_rate.describe()
    expected = reference_steps(initial, images, labels, update_sizes(3, epochs=2), rates,
                               momentum=0.0)
    for copy in trained_copies(trainer):
        assert_close(copy, expected)


def _fp16_trainer(images, steps=2, num_epochs=None, **flags):
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    try:
        keras.utils.set_random_seed(5)
        model = tiny_model()
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    flags = dict(dict(staging_depth=0, fp16_inc_loss_scale_every_n=100), **flags)
    length = dict(num_epochs=num_epochs) if num_epochs else dict(num_batches=100)
    params = Params(device="cpu", num_gpus=2, variable_update="replicated",
                    optimizer="momentum", init_learning_rate=LEARNING_RATE,
                    num_warmup_batches=0, gradient_accumulation_steps=steps, use_fp16=True,
                    fp16_enable_auto_loss_scale=True, fp16_loss_scale=1024.0,
                    allow_emulated_precision=True, **length, **flags)
    labels = np.arange(len(images), dtype=np.int32) % NUM_CLASSES
    return Trainer(params, model=model, input_source=from_arrays(
        images, labels, GLOBAL_BATCH, num_epochs=num_epochs))


def test_dynamic_loss_scale_counts_updates():
    """Doubles after N=3 finite UPDATES (6 micro-batches), not after 3 micro-batches."""
    images, _ = examples(8 * GLOBAL_BATCH)
    trainer = _fp16_trainer(images, fp16_inc_loss_scale_every_n=3)
    scale = trainer.loss_scale
    seen = []
    for _ in range(4):
        result = trainer.step()
        assert result.finite
        seen.append((result.extras["loss_scale"], int(scale.good_steps.numpy())))
    assert seen == [(1024.0, 1), (1024.0, 2), (2048.0, 0), (2048.0, 1)]
    assert trainer.global_step() == 4


def test_overflow_in_one_micro_batch_skips_the_whole_update():
    """Update 3's first micro-batch (batch 4) overflows float16 in its
    gradients (the routine overflow: the loss stays finite), its second is
    fine: nothing is applied on any copy, the step stays, the scale halves
    once; the next update applies normally (the accumulators start clean)."""
    images, _ = examples(6 * GLOBAL_BATCH)
    images[4 * GLOBAL_BATCH] = 1000.0  # one example: its scaled gradient passes 65504
    trainer = _fp16_trainer(images)
    scale = trainer.loss_scale
    for _ in range(2):
        assert trainer.step().finite
    before = trained_copies(trainer)
    result = trainer.step()
    assert not result.finite and math.isfinite(result.loss)
    assert trainer.global_step() == 2
    assert result.extras["loss_scale"] == 512.0 and float(scale.scale.numpy()) == 512.0
    assert int(scale.good_steps.numpy()) == 0
    for old, new in zip(before, trained_copies(trainer)):
        for a, b in zip(old, new):
            np.testing.assert_array_equal(a, b)
    result = trainer.step()  # batches 0 and 1 again (the input repeats)
    assert result.finite and trainer.global_step() == 3
    after = trained_copies(trainer)
    assert all(np.isfinite(v).all() for copy in after for v in copy)
    assert any(not np.array_equal(a, b) for a, b in zip(before[0], after[0]))
    assert int(scale.good_steps.numpy()) == 1 and float(scale.scale.numpy()) == 512.0



class UpdateLog(Callback):
    """Each loop step's examples and whether its update was applied; asks to
    stop after step `stop_after`."""

    def __init__(self, stop_after=None):
        self.examples, self.finite, self.stop_after = [], [], stop_after

    def after_step(self, step, result, seconds):
        self.examples.append(result.examples)
        self.finite.append(result.finite)
        if step == self.stop_after:
            self.loop.request_stop("test")


@pytest.mark.parametrize("stop_after,staging_depth", [(None, 1), (1, 2)])
def test_skipped_update_keeps_the_epochs_updates_in_place(stop_after, staging_depth):
    """K=4 over epochs of 6 batches (updates of 4 and 2): each epoch's first
    update overflows (example 0) and is skipped, so the global step lags the
    input. The next update still takes the epoch's last 2 batches, and the run
    ends on the epochs' last batch (not reading past the input's end); a stop
    after the skipped update drains exactly to the end of the next one,
    nothing left staged."""
    images, _ = examples()
    images[0] = 1000.0  # its float16 gradient overflows at the scale 1024
    trainer = _fp16_trainer(images, steps=4, num_epochs=2, staging_depth=staging_depth)
    log = UpdateLog(stop_after)
    trainer.train(write=quiet, callbacks=[log])
    if stop_after is None:
        assert log.examples == [16, 6, 16, 6]
        assert log.finite == [False, True, False, True]
        assert trainer.global_step() == 2
        assert float(trainer.loss_scale.scale.numpy()) == 256.0  # halved twice
    else:
        assert log.examples == [16, 6] and log.finite == [False, True]
        assert trainer.global_step() == 1 and trainer.staged_batches() == 0


# collective_all_reduce x accumulation across 2 worker processes:
# tests/engine/test_multiworker.py::test_two_workers_accumulating_equal_one_process_with_four_devices
# (trained in that file's shared 2-worker launch).
