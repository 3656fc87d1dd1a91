"""Batch-norm numbers recomputed independently (docs/architecture.md, 4; docs/data.md, Models).

- The moving statistics after a step are tower 0's, i.e. the momentum update
  with the mean and biased variance of tower 0's slice computed here with
  numpy, and the other towers' slices would give clearly different values (so
  the test can tell whose were kept). Every replicated copy holds them,
  bit-identical. A tower with no examples contributes none.
- `independent`: each copy keeps the statistics of its own slice.
- The fused layer's unknown-batch path (the shape the engine's partial last
  batch takes) equals keras.layers.BatchNormalization, outputs and moving
  statistics to 1e-5, on a partial batch inside a tf.function whose input
  signature has batch dimension None.
"""
import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.input_pipeline import from_arrays
from towertrain.models import FusedBatchNormalization

MOMENTUM = 0.5
IMAGE_SHAPE = (2, 2, 3)
TOL = dict(rtol=1e-5, atol=1e-6)


def bn_model():
    """Batch norm straight on the input: its statistics are those of the raw slice."""
    return keras.Sequential([
        keras.Input(IMAGE_SHAPE),
        FusedBatchNormalization(momentum=MOMENTUM, name="bn"),
        keras.layers.GlobalAveragePooling2D(name="pool"),
        keras.layers.Dense(4, name="logits"),
    ], name="bn_tiny")


def bn_data(num_examples, period):
    """Example j has mean ~ (j % period) and spread ~ 1 + 0.5 (j % period), so
    slices at different offsets of a batch have clearly different statistics."""
    rng = np.random.default_rng(3)
    offset = (np.arange(num_examples) % period).astype(np.float32)
    images = rng.standard_normal((num_examples,) + IMAGE_SHAPE).astype(np.float32)
    images = images * (1 + 0.5 * offset)[:, None, None, None] + offset[:, None, None, None]
    labels = rng.integers(0, 4, num_examples).astype(np.int32)
    return images, labels


def split_sizes(batch, n):
    return [batch // n + (1 if i < batch % n else 0) for i in range(n)]


def numpy_stats(batches):
    """Moving (mean, variance) after momentum updates with these slices, Keras' formula."""
    mean = np.zeros(IMAGE_SHAPE[-1], np.float64)
    var = np.ones(IMAGE_SHAPE[-1], np.float64)
    for x in batches:
        x = x.astype(np.float64)
        mean = MOMENTUM * mean + (1 - MOMENTUM) * x.mean(axis=(0, 1, 2))
        var = MOMENTUM * var + (1 - MOMENTUM) * x.var(axis=(0, 1, 2))
    return mean, var


def tower_slices(images, global_batch, num_devices, steps, tower):
    sizes = split_sizes(global_batch, num_devices)
    start = sum(sizes[:tower])
    return [images[k * global_batch + start:k * global_batch + start + sizes[tower]]
            for k in range(steps)]


def run_steps(variable_update, num_devices, global_batch, steps=2, all_reduce=None):
    images, labels = bn_data(steps * global_batch, global_batch)
    params = Params(device="cpu", num_gpus=num_devices,
                    variable_update=variable_update, all_reduce_spec=all_reduce,
                    init_learning_rate=0.1)
    trainer = Trainer(params, model=bn_model(),
                      input_source=from_arrays(images, labels, global_batch))
    for _ in range(steps):
        result = trainer.step()
        assert np.isfinite(float(getattr(result, "loss", result)))
    return trainer, images


def values(variables):
    return [v.numpy() for v in variables]


SYNC_CASES = [
    ("parameter_server", 3, 9, None),
    ("replicated", 3, 9, "pscpu"),
    ("replicated", 2, 7, "ring"),   # uneven slices 4, 3
    ("replicated", 3, 2, "pscpu"),  # tower 2 has no examples
]


@pytest.mark.parametrize("variable_update,num_devices,global_batch,all_reduce", SYNC_CASES,
                         ids=["ps_3x3", "replicated_3x3", "ring_4+3", "replicated_2_over_3"])
def test_moving_statistics_are_tower0s(variable_update, num_devices, global_batch,
                                       all_reduce):
    steps = 2
    trainer, images = run_steps(variable_update, num_devices, global_batch, steps,
                                all_reduce)
    expected = [numpy_stats(tower_slices(images, global_batch, num_devices, steps, t))
                for t in range(num_devices)
                if split_sizes(global_batch, num_devices)[t] > 0]
    # The towers' own statistics differ clearly: the test can tell whose were kept.
    for other in expected[1:]:
        assert np.abs(other[0] - expected[0][0]).max() > 0.1
    _, non_trainable = trainer.variables.primary_variables()
    mean, var = values(non_trainable)
    np.testing.assert_allclose(mean, expected[0][0], **TOL)
    np.testing.assert_allclose(var, expected[0][1], **TOL)
    if variable_update == "replicated":
        copies = trainer.variables.non_trainable_copies()
        assert len(copies) == num_devices
        for copy in copies[1:]:  # every copy holds tower 0's, bit for bit
            for a, b in zip(values(copy), values(copies[0])):
                np.testing.assert_array_equal(a, b)


def test_independent_copies_keep_their_own_slices_statistics():
    num_devices, global_batch, steps = 3, 9, 2
    trainer, images = run_steps("independent", num_devices, global_batch, steps)
    copies = trainer.variables.non_trainable_copies()
    assert len(copies) == num_devices
    for tower, copy in enumerate(copies):
        mean, var = numpy_stats(tower_slices(images, global_batch, num_devices, steps, tower))
        np.testing.assert_allclose(copy[0].numpy(), mean, **TOL)
        np.testing.assert_allclose(copy[1].numpy(), var, **TOL)


def test_partial_last_batch_statistics_through_the_engine():
    """7 examples in batches of 4 over 2 devices: the batch size is only known at
    run time, so the towers run the fused layer's unknown-batch path; the last
    batch gives tower 0 two examples (variance correction 7/8 matters)."""
    images, labels = bn_data(7, 4)
    params = Params(device="cpu", num_gpus=2,
                    variable_update="replicated", staging_depth=0,
                    init_learning_rate=0.1, num_epochs=1)
    trainer = Trainer(params, model=bn_model(),
                      input_source=from_arrays(images, labels, 4, num_epochs=1))
    for _ in range(2):
        trainer.step()
    mean, var = numpy_stats([images[0:2], images[4:6]])
    for copy in trainer.variables.non_trainable_copies():
        np.testing.assert_allclose(copy[0].numpy(), mean, **TOL)
        np.testing.assert_allclose(copy[1].numpy(), var, **TOL)


@pytest.mark.parametrize("axis,shape", [(-1, (2, 2, 4)), (1, (4, 2, 2)), (-1, (1, 1, 3))],
                         ids=["nhwc", "nchw", "nhwc_1x1"])
def test_fused_unknown_batch_path_matches_keras_on_partial_batches(axis, shape):
    fused = FusedBatchNormalization(axis=axis, momentum=0.8, epsilon=1e-3)
    ref = keras.layers.BatchNormalization(axis=axis, momentum=0.8, epsilon=1e-3)
    fused.build((None,) + shape)
    ref.build((None,) + shape)
    rng = np.random.default_rng(4)
    for a, b in zip(fused.weights, ref.weights):
        value = rng.uniform(0.5, 1.5, a.shape).astype(np.float32)
        a.assign(value)
        b.assign(value)
    spec = [tf.TensorSpec((None,) + shape, tf.float32)]
    run_fused = tf.function(lambda x: fused(x, training=True), input_signature=spec)
    run_ref = tf.function(lambda x: ref(x, training=True), input_signature=spec)
    for batch in (3, 2, 5):  # partial batches of varying size, one trace each
        x = (rng.standard_normal((batch,) + shape) * 2 + 0.5).astype(np.float32)
        np.testing.assert_allclose(run_fused(x).numpy(), run_ref(x).numpy(), **TOL)
        for a, b in zip(fused.weights, ref.weights):
            np.testing.assert_allclose(a.numpy(), b.numpy(), err_msg=a.path, **TOL)
    assert run_fused.experimental_get_tracing_count() == 1  # the unknown-batch graph
