"""Every private Keras or TensorFlow name towertrain uses, behind one function each.

TensorFlow 2.21 and Keras 3 have no public way to do these things, so the
engine reaches into their internals. Keeping each reach here, named and
documented, means an upgrade that renames one breaks one small function (and
tests/package/test_private_api.py says which name, under which versions),
not code spread over the engine. Nothing here imports towertrain.

check_available() lists the names that are missing in the installed versions.
The private modules are imported inside their function: a version without one
breaks that function only, not the import of this module (the engine's every
wing imports it), and check_available() names it.
"""
import contextlib
import functools
import importlib

import keras
import tensorflow as tf


def versions():
    """'TensorFlow X, Keras Y': for error messages about a missing private name."""
    return f"TensorFlow {tf.__version__}, Keras {keras.__version__}"


# --- Keras layers -------------------------------------------------------------

def flatten_layers(layer):
    """Every layer under `layer` (itself included), recursively.
    Touches: keras.layers.Layer._flatten_layers(include_self, recursive)."""
    return list(layer._flatten_layers(include_self=True, recursive=True))


def batch_norm_reduction_axes(layer):
    """The axes a built keras BatchNormalization reduces over for its moments.
    Touches: BatchNormalization._reduction_axes (set in build)."""
    return layer._reduction_axes


_REROUTED = "_towertrain_rerouted_moments"  # our marker on the Keras layer


def reroute_batch_norm_moments(layer, fn):
    """Makes a keras BatchNormalization compute its moments with
    fn(layer, original, inputs, mask) -> (mean, variance), where original is
    the layer's own moments(inputs, mask). Per instance, idempotent; returns
    whether the layer was rerouted now (False: it already was).
    Touches: BatchNormalization._moments(inputs, mask), replaced on the instance."""
    if getattr(layer, _REROUTED, False):
        return False
    original = layer._moments
    layer._moments = functools.partial(fn, layer, original)
    setattr(layer, _REROUTED, True)
    return True


def seed_generators(layer):
    """(owner path, attribute, SeedGenerator) for every seed generator under
    `layer`; the owner path is the chain of layer names from `layer` down.
    Touches: the layers' instance dicts (vars(layer)), private attributes
    included: Keras keeps no public list of a layer's seed generators."""
    found, stack, seen = [], [(layer.name, layer)], set()
    while stack:
        path, current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        # Public attributes first: Keras also tracks a generator in a private list.
        for attribute, value in sorted(vars(current).items(),
                                       key=lambda item: (item[0].startswith("_"), item[0])):
            children = value if isinstance(value, (list, tuple)) else [value]
            for child in children:
                if isinstance(child, keras.random.SeedGenerator) and id(child) not in seen:
                    seen.add(id(child))
                    found.append((path, attribute.lstrip("_"), child))
                elif isinstance(child, keras.layers.Layer):
                    stack.append((f"{path}/{child.name}", child))
    return found


# --- Keras optimizers ---------------------------------------------------------

def optimizer_variables(optimizer):
    """The model variables a built Keras optimizer updates, in build order.
    Touches: keras.optimizers.Optimizer._trainable_variables."""
    return list(optimizer._trainable_variables)


def optimizer_variable_index(optimizer, variable):
    """The position of `variable` among a built Keras optimizer's variables (the
    index of its slots in lists such as SGD's `momentums`), or None when the
    optimizer was not built with it.
    Touches: keras.optimizers.Optimizer._get_variable_index (a KeyError when unknown)."""
    try:
        return optimizer._get_variable_index(variable)
    except KeyError:
        return None


def optimizer_learning_rate(optimizer):
    """What the optimizer holds as its learning rate (a variable or a schedule),
    or None. Touches: keras.optimizers.Optimizer._learning_rate."""
    return getattr(optimizer, "_learning_rate", None)


# --- TensorFlow ---------------------------------------------------------------

def op_determinism_enabled():
    """Whether tf.config.experimental.enable_op_determinism() is on (no public
    getter). Touches: tensorflow.python.framework.config.is_op_determinism_enabled."""
    from tensorflow.python.framework import config as tf_config  # deferred: see the docstring
    return tf_config.is_op_determinism_enabled()


def onednn_enabled():
    """Whether this process runs TensorFlow's oneDNN (MKL) CPU kernels.
    Touches: tensorflow.python.util._pywrap_util_port.IsMklEnabled."""
    from tensorflow.python.util import _pywrap_util_port  # deferred: see the docstring
    return bool(_pywrap_util_port.IsMklEnabled())


def graph_function(graph, name):
    """The function `name` of a graph's function library, or None.
    Touches: FuncGraph._get_function (no public accessor)."""
    return graph._get_function(name)


def nccl_all_sum(tensors):
    """NCCL all-reduce (sum); each output on its input's device.
    Touches: tensorflow.python.ops.nccl_ops.all_sum (NcclAllReduce has no public API)."""
    from tensorflow.python.ops import nccl_ops  # deferred: see the docstring
    return nccl_ops.all_sum(tensors)


def collective_all_reduce(tensor, group_size, group_key, instance_key, merge_op="Add",
                          final_op="Id", timeout=0, ordering_token=None,
                          communication_hint="auto"):
    """A collective all-reduce over a group of devices (possibly of several workers).
    communication_hint: 'auto', 'ring' or 'nccl' (NCCL between GPUs; the
    runtime picks it only for a group of GPU devices).
    Touches: tensorflow.python.ops.collective_ops.all_reduce_v2."""
    from tensorflow.python.ops import collective_ops  # deferred: see the docstring
    return collective_ops.all_reduce_v2(
        tensor, group_size, group_key, instance_key, merge_op=merge_op,
        final_op=final_op, communication_hint=communication_hint, timeout=timeout,
        ordering_token=ordering_token)


def collective_reduce_scatter(tensor, group_size, group_key, instance_key, ordering_token,
                              communication_hint="nccl"):
    """A reduce-scatter (sum) over a group of devices: member r gets the sum of
    the r-th of group_size equal parts of the 1-D `tensor` (its length a
    multiple of group_size). TensorFlow 2.21 implements it with NCCL only
    (GPUs): on CPU devices the runtime finds no implementation ("undef").
    Touches: tf.raw_ops.CollectiveReduceScatterV2 (no Python API)."""
    return tf.raw_ops.CollectiveReduceScatterV2(
        input=tensor, group_size=group_size, group_key=group_key, instance_key=instance_key,
        ordering_token=[ordering_token], merge_op="Add", final_op="Id",
        communication_hint=communication_hint)


def collective_all_gather(tensor, group_size, group_key, instance_key, ordering_token,
                          communication_hint="nccl"):
    """An all-gather over a group of devices: every member gets the members'
    equal-shaped tensors concatenated along axis 0, in rank order (ring on
    CPU devices, NCCL on GPUs).
    Touches: tf.raw_ops.CollectiveGatherV2 (its Python wrapper lives in the
    private collective_ops)."""
    return tf.raw_ops.CollectiveGatherV2(
        input=tensor, group_size=group_size, group_key=group_key, instance_key=instance_key,
        ordering_token=[ordering_token], communication_hint=communication_hint)


def eager_context():
    """TensorFlow's eager context (graph collection, run metadata, server def).
    Touches: tensorflow.python.eager.context.context()."""
    from tensorflow.python.eager import context  # deferred: see the docstring
    return context.context()


@contextlib.contextmanager
def forget_custom_gradients():
    """Drops the gradient functions registered inside the block.

    A traced Keras `optimizer.apply` goes through the default replica
    context's all_reduce, a tf.custom_gradient that registers a
    "CustomGradient-<uid>" function in TensorFlow's global gradient registry
    for good; it is never looked up (nothing differentiates the update) and it
    holds the whole traced graph, so every Trainer built in a process stayed
    in memory. Touches: tensorflow.python.framework.ops._gradient_registry.
    """
    from tensorflow.python.framework import ops  # deferred: see the docstring
    registry = ops._gradient_registry._registry
    before = set(registry)
    try:
        yield
    finally:
        for name in [n for n in registry if n not in before]:
            if name.startswith("CustomGradient-"):
                del registry[name]


# --- availability -------------------------------------------------------------

def _batch_norm():
    layer = keras.layers.BatchNormalization()
    layer.build((None, 2, 2, 3))
    return layer


def _optimizer():
    variable = keras.Variable([1.0, 2.0], name="probe")
    optimizer = keras.optimizers.SGD(learning_rate=0.5)
    optimizer.build([variable])
    return optimizer


def _variable_index_probe():
    variables = [keras.Variable([1.0], name="a"), keras.Variable([2.0], name="b")]
    optimizer = keras.optimizers.SGD(learning_rate=0.5)
    optimizer.build(variables)
    return [optimizer._get_variable_index(v) for v in reversed(variables)] == [1, 0]


def _has_module_attribute(module, attribute):
    try:
        return callable(getattr(importlib.import_module(module), attribute, None))
    except ImportError:
        return False


# name -> a probe that is true when the name exists as towertrain uses it.
PRIVATE_NAMES = {
    "keras.layers.Layer._flatten_layers":
        lambda: callable(getattr(keras.layers.Layer, "_flatten_layers", None)),
    "keras.layers.BatchNormalization._moments":
        lambda: callable(getattr(_batch_norm(), "_moments", None)),
    "keras.layers.BatchNormalization._reduction_axes":
        lambda: isinstance(getattr(_batch_norm(), "_reduction_axes", None), (list, tuple)),
    "keras layer instance dicts (vars) holding SeedGenerators":
        lambda: any(isinstance(v, keras.random.SeedGenerator)
                    for v in vars(keras.layers.Dropout(0.5)).values()),
    "keras.optimizers.Optimizer._trainable_variables":
        lambda: isinstance(getattr(_optimizer(), "_trainable_variables", None), (list, tuple)),
    "keras.optimizers.Optimizer._get_variable_index":
        _variable_index_probe,
    "keras.optimizers.Optimizer._learning_rate":
        lambda: hasattr(_optimizer(), "_learning_rate"),
    "tensorflow.python.framework.config.is_op_determinism_enabled":
        lambda: _has_module_attribute("tensorflow.python.framework.config",
                                      "is_op_determinism_enabled"),
    "tensorflow.python.util._pywrap_util_port.IsMklEnabled":
        lambda: _has_module_attribute("tensorflow.python.util._pywrap_util_port",
                                      "IsMklEnabled"),
    "FuncGraph._get_function":
        lambda: callable(getattr(tf.Graph, "_get_function", None)),
    "tensorflow.python.ops.nccl_ops.all_sum":
        lambda: _has_module_attribute("tensorflow.python.ops.nccl_ops", "all_sum"),
    "tensorflow.python.ops.collective_ops.all_reduce_v2":
        lambda: _has_module_attribute("tensorflow.python.ops.collective_ops",
                                      "all_reduce_v2"),
    "tf.raw_ops.CollectiveReduceScatterV2":
        lambda: callable(getattr(tf.raw_ops, "CollectiveReduceScatterV2", None)),
    "tf.raw_ops.CollectiveGatherV2":
        lambda: callable(getattr(tf.raw_ops, "CollectiveGatherV2", None)),
    "tensorflow.python.framework.ops._gradient_registry._registry":
        lambda: isinstance(getattr(getattr(importlib.import_module("tensorflow.python.framework.ops"),
                                           "_gradient_registry", None), "_registry", None), dict),
    "tensorflow.python.eager.context.context":
        lambda: _has_module_attribute("tensorflow.python.eager.context", "context"),
}


def check_available():
    """The PRIVATE_NAMES missing (or not as used) in the installed versions."""
    missing = []
    for name, probe in PRIVATE_NAMES.items():
        try:
            ok = probe()
        except Exception:  # noqa: BLE001 - any failure means the name is not as used
            ok = False
        if not ok:
            missing.append(name)
    return missing
