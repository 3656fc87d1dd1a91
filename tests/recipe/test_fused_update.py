"""towertrain.recipe.fused_update: one fused kernel per variable, the same bits
as Keras' optimizer.apply, on the Keras optimizer's own state.

Each case runs STEPS traced updates twice from the same start, once with
Keras' apply and once fused, and compares every variable, every slot and
iterations exactly: the fused kernels do Keras' arithmetic op for op (the
same casts, the same products and sums, one rounding each), so nothing is
allowed to differ.
"""
import collections

import keras
import numpy as np
import pytest
import tensorflow as tf

import helpers.tiny_models  # noqa: F401 - registers ckpt_tiny
from helpers.graph_walks import all_ops, variable_of
from helpers.tiny_models import tiny_params
from towertrain import Trainer
from towertrain.recipe import fused_update

STEPS = 4
SHAPES = [(3, 4), (7,), (2, 2, 3)]
# The learning rate drops after update 2: read after the increment, it would
# drop one update early.
SCHEDULE = keras.optimizers.schedules.PiecewiseConstantDecay([2], [0.1, 0.01])

FUSED = {
    "sgd": lambda: keras.optimizers.SGD(0.1),
    "momentum": lambda: keras.optimizers.SGD(0.1, momentum=0.9),
    "nesterov": lambda: keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    "schedule": lambda: keras.optimizers.SGD(SCHEDULE, momentum=0.9),
}
# --fp16_vars: float16 weights beside float32 batch-norm parameters, one optimizer.
DTYPES = {"float32": ("float32",) * 3, "fp16_vars": ("float16", "float16", "float32")}


def _setup(make_optimizer, dtypes, seed=0):
    rng = np.random.default_rng(seed)
    variables = [keras.Variable(rng.standard_normal(shape).astype(dtype), dtype=dtype,
                                name=f"v{i}")
                 for i, (shape, dtype) in enumerate(zip(SHAPES, dtypes))]
    optimizer = make_optimizer()
    optimizer.build(variables)
    return variables, optimizer


def _gradients(dtypes, steps=STEPS, seed=1):
    rng = np.random.default_rng(seed)
    return [[tf.constant(rng.standard_normal(shape).astype(dtype))
             for shape, dtype in zip(SHAPES, dtypes)] for _ in range(steps)]


def _step(optimizer, variables, fused):
    @tf.function
    def step(grads):
        if fused:
            fused_update.apply(optimizer, grads, variables)
        else:
            optimizer.apply(grads, variables)
    return step


def _state(variables, optimizer):
    return [v.numpy() for v in variables] + [v.numpy() for v in optimizer.variables]


def _run(make_optimizer, dtypes, fused):
    variables, optimizer = _setup(make_optimizer, dtypes)
    step = _step(optimizer, variables, fused)
    for grads in _gradients(dtypes):
        step(grads)
    return variables, optimizer


def _assert_same(a, b):
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        assert x.dtype == y.dtype and np.array_equal(x, y), f"state {i} differs"


@pytest.mark.parametrize("dtypes", DTYPES.values(), ids=DTYPES.keys())
@pytest.mark.parametrize("name", FUSED)
def test_fused_equals_keras_apply_bit_for_bit(name, dtypes):
    keras_vars, keras_opt = _run(FUSED[name], dtypes, fused=False)
    fused_vars, fused_opt = _run(FUSED[name], dtypes, fused=True)
    assert fused_update.fallback_reason(fused_opt, _gradients(dtypes, 1)[0], fused_vars) is None
    assert int(fused_opt.iterations.numpy()) == int(keras_opt.iterations.numpy()) == STEPS
    # The optimizer's variables (iterations, slots, learning rate) in Keras' order.
    _assert_same(_state(fused_vars, fused_opt), _state(keras_vars, keras_opt))
    assert not np.array_equal(fused_vars[0].numpy(), _setup(FUSED[name], dtypes)[0][0].numpy())


FALLBACK = {
    "adam": lambda: keras.optimizers.Adam(0.01),
    "rmsprop": lambda: keras.optimizers.RMSprop(0.01, momentum=0.5),
    "rmsprop_centered": lambda: keras.optimizers.RMSprop(0.01, centered=True),
    "sgd_clipnorm": lambda: keras.optimizers.SGD(0.1, momentum=0.9, clipnorm=0.5),
    "sgd_weight_decay": lambda: keras.optimizers.SGD(0.1, momentum=0.9, weight_decay=0.1),
}


@pytest.mark.parametrize("name", FALLBACK)
def test_without_an_exact_kernel_keras_applies_the_update(name):
    dtypes = DTYPES["float32"]
    variables, optimizer = _setup(FALLBACK[name], dtypes)
    grads = _gradients(dtypes, 1)[0]
    assert fused_update.fallback_reason(optimizer, grads, variables) is not None
    graph = _step(optimizer, variables, True).get_concrete_function(grads).graph
    types = {op.type for op in all_ops(graph)}
    assert not any(t.startswith("ResourceApply") for t in types), types
    keras_vars, keras_opt = _run(FALLBACK[name], dtypes, fused=False)
    fused_vars, fused_opt = _run(FALLBACK[name], dtypes, fused=True)
    _assert_same(_state(fused_vars, fused_opt), _state(keras_vars, keras_opt))


def test_keras_checkpoint_resumes_fused_identically(tmp_path):
    dtypes = DTYPES["float32"]
    grads = _gradients(dtypes)
    half = STEPS // 2
    # Keras alone, all steps; the checkpoint written half way.
    variables, optimizer = _setup(FUSED["schedule"], dtypes)
    step = _step(optimizer, variables, fused=False)
    for g in grads[:half]:
        step(g)
    path = tf.train.Checkpoint(variables=variables, optimizer=optimizer).write(
        str(tmp_path / "ckpt"))
    for g in grads[half:]:
        step(g)
    # Fresh variables and optimizer, restored, continued fused.
    resumed_vars, resumed_opt = _setup(FUSED["schedule"], dtypes, seed=5)
    tf.train.Checkpoint(variables=resumed_vars, optimizer=resumed_opt).read(
        path).assert_consumed()
    assert int(resumed_opt.iterations.numpy()) == half
    step = _step(resumed_opt, resumed_vars, fused=True)
    for g in grads[half:]:
        step(g)
    _assert_same(_state(resumed_vars, resumed_opt), _state(variables, optimizer))


def test_fused_momentum_is_one_kernel_per_variable_and_no_assign_on_them():
    dtypes = DTYPES["float32"]
    variables, optimizer = _setup(FUSED["momentum"], dtypes)
    step = _step(optimizer, variables, fused=True)
    graph = step.get_concrete_function(_gradients(dtypes, 1)[0]).graph
    watched = variables + list(optimizer.momentums)
    kernels = collections.Counter()
    writes = []
    for op in all_ops(graph):
        if op.type == "ResourceApplyKerasMomentum":
            kernels[variable_of(op.inputs[0], variables).name] += 1
            assert variable_of(op.inputs[1], optimizer.momentums) is not None
        elif op.type in ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"):
            written = variable_of(op.inputs[0], watched + [optimizer.iterations])
            writes.append((op.type, written.path if written is not None else None))
    assert kernels == {v.name: 1 for v in variables}
    # The only other write: iterations, once.
    assert writes == [("AssignAddVariableOp", optimizer.iterations.path)]


@pytest.mark.parametrize("mode", ["replicated", "parameter_server", "independent"])
def test_each_manager_writes_each_variable_copy_with_one_fused_kernel(mode):
    trainer = Trainer(tiny_params(mode, num_batches=1))  # --optimizer=momentum
    copies = [v for copy in trainer.variables.trainable_copies() for v in copy]
    writes = collections.Counter()
    for op in all_ops(trainer.trace_step().graph):
        if op.type.startswith("ResourceApply") or op.type in (
                "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"):
            written = variable_of(op.inputs[0], copies)
            if written is not None:  # copies share their names: count by position
                writes[(op.type, [id(v) for v in copies].index(id(written)))] += 1
    assert len(copies) == 6 * (1 if mode == "parameter_server" else 2)
    assert writes == {("ResourceApplyKerasMomentum", i): 1 for i in range(len(copies))}
