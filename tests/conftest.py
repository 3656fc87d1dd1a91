"""Test setup: four logical CPU devices, configured before TensorFlow runs any op.

Tests use prefixes of them (towertrain.engine.process.devices.ensure_logical_cpus accepts a
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
from tensorflow.python.framework import ops as tf_ops  # noqa: E402

NUM_LOGICAL_CPUS = 4

_cpu = tf.config.list_physical_devices("CPU")[0]
if tf.config.get_logical_device_configuration(_cpu) is None:
    tf.config.set_logical_device_configuration(
        _cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(NUM_LOGICAL_CPUS)])


# TensorFlow's gradient registry (private: no public way to unregister). Every
# trace of a Keras `optimizer.apply` goes through the default replica context's
# all_reduce, a tf.custom_gradient that registers a "CustomGradient-<uid>"
# function for good, and that function holds the whole traced graph (with its
# model, variables and step). Left alone, every trainer a test builds stays in
# memory until the worker exits (test_equivalence.py: +400 MB over 53 tests).
_GRADIENTS = tf_ops._gradient_registry._registry


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """After each test (its fixtures torn down and released): drop the custom
    gradients its traces registered, collect its garbage, then freeze what survives.

    A gradient is looked up only while a trace differentiates its op, inside
    the test that traced it, so the entries are dead weight afterwards.
    Frozen objects are skipped by the collector, so later tests' collections do
    not re-walk what TensorFlow keeps alive (test_models_train.py: 258 s ->
    204 s). This runs after pytest drops the test's fixture values (at
    teardown they are still referenced and would be frozen, alive or not).
    Cycles that die after being frozen are never collected, so at the end of
    each test file everything is thawed and collected once. Harness only: no
    test's behaviour or check changes.
    """
    registered = set(_GRADIENTS)
    try:
        return (yield)
    finally:
        for name in [n for n in _GRADIENTS if n not in registered]:
            if name.startswith("CustomGradient-"):
                del _GRADIENTS[name]
        if nextitem is None or nextitem.module is not item.module:
            gc.unfreeze()
        gc.collect()
        gc.freeze()
