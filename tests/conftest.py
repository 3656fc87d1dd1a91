"""Test setup: four logical CPU devices, configured before TensorFlow runs any op.

Tests use prefixes of them (towertrain.engine.devices.ensure_logical_cpus accepts a
process that already has more than it needs).
"""
import gc
import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# As towertrain/__init__.py: NCHW on CPU needs oneDNN, which TensorFlow enables
# by default only on some CPUs; this must precede the TensorFlow import below.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import tensorflow as tf  # noqa: E402

NUM_LOGICAL_CPUS = 4

_cpu = tf.config.list_physical_devices("CPU")[0]
if tf.config.get_logical_device_configuration(_cpu) is None:
    tf.config.set_logical_device_configuration(
        _cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(NUM_LOGICAL_CPUS)])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After each test: collect its garbage, then freeze what survives.

    Traced steps leave millions of objects alive (TensorFlow keeps the traced
    graphs), and every full collection Python ran in later tests walked them
    all (test_models_train.py alone: 258 s -> 204 s). Frozen objects are
    skipped by the collector; what a test allocates is collected as before.
    Cycles that die after being frozen are never collected, so at the end of
    each test file everything is thawed and collected once: memory stays bounded
    by one file's leftovers. Harness only: no test's behaviour or check changes.
    """
    try:
        return (yield)
    finally:
        if nextitem is None or nextitem.module is not item.module:
            gc.unfreeze()
        gc.collect()
        gc.freeze()


def keras_serial_steps(model, optimizer, images, labels, global_batch, steps):
    """The independent reference for equivalence tests: stock Keras stepping
    one model on consecutive global batches of mean sparse cross-entropy."""
    import keras
    for k in range(steps):
        x = images[k * global_batch:(k + 1) * global_batch]
        y = labels[k * global_batch:(k + 1) * global_batch]
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
                y, logits, from_logits=True))
        optimizer.apply(tape.gradient(loss, model.trainable_variables),
                        model.trainable_variables)
    return model
