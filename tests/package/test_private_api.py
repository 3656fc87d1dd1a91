"""Every private Keras/TensorFlow name towertrain relies on exists in the
installed versions and behaves as towertrain/private_api.py uses it.

A failure names the private name and the versions: an upgrade moved it, and
the one accessor in private_api.py that touches it needs updating.
"""
import numpy as np
import pytest
import tensorflow as tf

import keras

from towertrain import private_api


def _say(name):
    return f"private name {name!r} is missing or changed under {private_api.versions()}"


@pytest.mark.parametrize("name", sorted(private_api.PRIVATE_NAMES))
def test_private_name_is_available(name):
    assert name not in private_api.check_available(), _say(name)


def _built_batch_norm():
    layer = keras.layers.BatchNormalization()
    layer.build((None, 2, 2, 3))
    return layer


def test_flatten_layers_reaches_nested_layers():
    inner = keras.Sequential([keras.layers.Dense(2, name="inner_dense")], name="inner")
    model = keras.Sequential([keras.Input((3,)), inner, keras.layers.Dense(1, name="out")])
    names = [layer.name for layer in private_api.flatten_layers(model)]
    assert {"inner", "inner_dense", "out", model.name} <= set(names), \
        _say("keras.layers.Layer._flatten_layers") + f": got {names}"


def test_batch_norm_moments_take_inputs_and_mask_and_return_mean_and_variance():
    layer = _built_batch_norm()
    x = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 2, 2, 3))
    axes = private_api.batch_norm_reduction_axes(layer)
    assert list(axes) == [0, 1, 2], _say("keras.layers.BatchNormalization._reduction_axes")
    mean, variance = layer._moments(x, None)
    np.testing.assert_allclose(mean, tf.reduce_mean(x, axes), rtol=1e-6,
                               err_msg=_say("keras.layers.BatchNormalization._moments"))
    np.testing.assert_allclose(variance, tf.math.reduce_variance(x, axes), rtol=1e-5,
                               err_msg=_say("keras.layers.BatchNormalization._moments"))


def test_rerouted_moments_are_what_the_layer_normalizes_with():
    layer = _built_batch_norm()
    calls = []

    def fixed(owner, original, inputs, mask):
        calls.append((owner, mask))
        return tf.zeros([3]), tf.ones([3])

    assert private_api.reroute_batch_norm_moments(layer, fixed)
    assert not private_api.reroute_batch_norm_moments(layer, fixed)  # idempotent
    x = tf.constant(np.full((2, 2, 2, 3), 5.0, np.float32))
    out = layer(x, training=True)
    assert calls and calls[0][0] is layer, _say("keras.layers.BatchNormalization._moments")
    np.testing.assert_allclose(out, 5.0 / np.sqrt(1.0 + layer.epsilon), rtol=1e-5,
                               err_msg=_say("keras.layers.BatchNormalization._moments"))


def test_seed_generators_found_with_their_owner_and_attribute():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dropout(0.5, name="drop")],
                             name="m")
    found = private_api.seed_generators(model)
    assert [(owner, attribute) for owner, attribute, _ in found] == [
        ("m/drop", "seed_generator")], _say("vars(layer) holding SeedGenerators")
    assert isinstance(found[0][2], keras.random.SeedGenerator)


def test_optimizer_variables_and_learning_rate():
    variable = keras.Variable([1.0, 2.0], name="w")
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    optimizer = keras.optimizers.SGD(learning_rate=schedule, momentum=0.9)
    optimizer.build([variable])
    assert private_api.optimizer_variables(optimizer) == [variable], \
        _say("keras.optimizers.Optimizer._trainable_variables")
    assert private_api.optimizer_learning_rate(optimizer) is schedule, \
        _say("keras.optimizers.Optimizer._learning_rate")


def test_op_determinism_switch_reads_back():
    assert private_api.op_determinism_enabled() in (True, False), \
        _say("tensorflow.python.framework.config.is_op_determinism_enabled")


def test_onednn_switch_reads_back():
    assert private_api.onednn_enabled() in (True, False), \
        _say("tensorflow.python.util._pywrap_util_port.IsMklEnabled")


def test_graph_function_finds_a_cond_branch():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: x + 1.0, lambda: x - 1.0)

    graph = f.get_concrete_function(tf.constant(1.0)).graph
    conds = [op for op in graph.get_operations() if op.type in ("If", "StatelessIf")]
    assert conds
    name = conds[0].get_attr("then_branch").name
    assert private_api.graph_function(graph, name) is not None, _say("FuncGraph._get_function")


def test_collective_all_reduce_sums_over_a_group_of_one():
    result = private_api.collective_all_reduce(
        tf.constant([1.0, 2.0]), group_size=1, group_key=9001, instance_key=1)
    np.testing.assert_allclose(result, [1.0, 2.0],
                               err_msg=_say("collective_ops.all_reduce_v2"))


def test_nccl_all_sum_is_callable():
    # NCCL needs GPUs; on a CPU machine only that the function exists is checked.
    assert "tensorflow.python.ops.nccl_ops.all_sum" not in private_api.check_available(), \
        _say("tensorflow.python.ops.nccl_ops.all_sum")


def test_eager_context_collects_graphs():
    context = private_api.eager_context()
    for method in ("enable_graph_collection", "disable_graph_collection",
                   "export_run_metadata"):
        assert callable(getattr(context, method, None)), \
            _say(f"tensorflow.python.eager.context.context().{method}")


def test_a_missing_name_is_reported(monkeypatch):
    monkeypatch.setitem(private_api.PRIVATE_NAMES, "keras.gone._name", lambda: False)
    monkeypatch.setitem(private_api.PRIVATE_NAMES, "keras.raises._name", lambda: 1 / 0)
    missing = private_api.check_available()
    assert "keras.gone._name" in missing and "keras.raises._name" in missing


def test_trainers_leave_no_custom_gradient_behind():
    """Each trace of the step used to register a CustomGradient for good (Keras'
    optimizer.apply), holding the whole graph: every Trainer of a process stayed
    in memory. Three trainers (three traces) now leave the registry as it was.
    Adam: SGD and momentum update with fused kernels, not Keras' apply."""
    import towertrain
    from tensorflow.python.framework import ops
    registry = ops._gradient_registry._registry

    def custom():
        return {n for n in registry if n.startswith("CustomGradient-")}

    before = custom()
    rng = np.random.RandomState(0)
    images = rng.rand(16, 32, 32, 3).astype(np.float32)
    labels = rng.randint(0, 10, 16).astype(np.int32)
    for mode in ("parameter_server", "replicated", "independent"):
        params = towertrain.Params(model="trivial", device="cpu", num_gpus=2,
                                   variable_update=mode, num_warmup_batches=0,
                                   num_batches=2, optimizer="adam")
        trainer = towertrain.Trainer(params, input_source=towertrain.from_arrays(
            images, labels, 8))
        trainer.step()
        trainer.close()
    assert custom() == before
