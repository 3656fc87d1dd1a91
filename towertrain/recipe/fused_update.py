"""The optimizer's update as one fused TensorFlow kernel per variable.

Keras 3's `optimizer.apply` writes SGD with momentum as separate ops: per
variable a read, two multiplies, a subtract, an AssignVariableOp on the slot
and an AssignAddVariableOp on the variable (about 37 ops per variable and
device in a whole step). tf_cnn_benchmarks ran one `ApplyMomentum` kernel.
`apply` below runs TensorFlow's fused resource kernels on the Keras
optimizer's own state instead: its slot variables (SGD's `momentums`) and
its `iterations`, so a checkpoint holds exactly what it held before and the
resume guards (the optimizer and its options are recorded per run) see no
difference.

Fused, with the same arithmetic as Keras' `update_step`, op for op, so the
values are bit-identical (tests/recipe/test_fused_update.py):
- SGD without momentum: `ResourceApplyGradientDescent` (var -= grad * lr).
- SGD with momentum, nesterov or not: `ResourceApplyKerasMomentum`
  (accum = accum * momentum - grad * lr; var += accum, or with nesterov
  var += accum * momentum - grad * lr), Keras' own formula.

Everything else falls back to `optimizer.apply`, unchanged:
- Adam: `ResourceApplyAdam` computes (1 - beta_1) in the variable's dtype,
  Keras from a Python float (float32(1 - 0.9) != 1 - float32(0.9)), so the
  moments differ in their last bits from the first step.
- RMSprop: `ResourceApplyRMSProp` updates the mean square as
  ms + (grad^2 - ms) * (1 - rho), Keras as rho * ms + (1 - rho) * grad^2,
  and always keeps a momentum slot Keras only has with momentum > 0.
- Options whose work Keras' `apply` does around `update_step`: clipnorm,
  clipvalue, global_clipnorm, weight_decay, use_ema, loss_scale_factor,
  gradient_accumulation_steps (towertrain's optimizers set none of them:
  clipping, weight decay, loss scaling and accumulation are the engine's),
  variable constraints, a missing or sparse gradient, a dtype other than
  float16 or float32, an optimizer not yet built, a tf.distribute strategy
  (Keras would all-reduce the gradients), a subclass of SGD (it may
  redefine update_step).
"""
import keras
import tensorflow as tf

from towertrain import private_api

_FUSED_DTYPES = ("float16", "float32")
# Keras' apply does these around update_step; a fused kernel would skip them.
_APPLY_OPTIONS = ("clipnorm", "clipvalue", "global_clipnorm", "weight_decay",
                  "loss_scale_factor", "gradient_accumulation_steps")


def apply(optimizer, grads, variables):
    """Applies `grads` to `variables` as `optimizer.apply(grads, variables)`
    does, with one fused kernel per variable where one matches Keras exactly
    (see the module's docstring), else with `optimizer.apply` itself."""
    grads, variables = list(grads), list(variables)
    if fallback_reason(optimizer, grads, variables) is not None:
        optimizer.apply(grads, variables)
        return
    with tf.name_scope(optimizer.name):
        # Keras evaluates a schedule once per apply, at the iterations before
        # the increment below (ordered after this read by automatic control
        # dependencies: both touch the iterations variable).
        learning_rate = optimizer.learning_rate
        for grad, variable in zip(grads, variables):
            _sgd_update(optimizer, grad, variable, learning_rate)
        # Keras' assign_add on its Variable reads, adds and assigns; the
        # TensorFlow variable's is one AssignAddVariableOp, the same sum.
        _tf_variable(optimizer.iterations).assign_add(1)


def fallback_reason(optimizer, grads, variables):
    """Why `apply` would leave this update to `optimizer.apply`, or None when
    it runs fused kernels."""
    if type(optimizer) is not keras.optimizers.SGD:
        return f"{type(optimizer).__name__} has no fused kernel that matches Keras exactly"
    if not optimizer.built:
        return "the optimizer is not built"
    for option in _APPLY_OPTIONS:
        if getattr(optimizer, option, None):
            return f"{option} is set"
    if optimizer.use_ema:
        return "use_ema is set"
    if tf.distribute.has_strategy():
        return "a tf.distribute strategy is in scope"
    if len(grads) != len(variables) or not grads:
        return "gradients and variables do not pair up"
    for grad, variable in zip(grads, variables):
        if grad is None or isinstance(grad, tf.IndexedSlices):
            return f"{variable.name}: the gradient is missing or sparse"
        if keras.backend.standardize_dtype(variable.dtype) not in _FUSED_DTYPES:
            return f"{variable.name}: dtype {variable.dtype}"
        if getattr(variable, "constraint", None) is not None:
            return f"{variable.name} has a constraint"
        if private_api.optimizer_variable_index(optimizer, variable) is None:
            return f"{variable.name} is not one of the optimizer's variables"
    return None


def _tf_variable(variable):
    return variable.value if isinstance(variable, keras.Variable) else variable


def _handle(variable):
    return _tf_variable(variable).handle


def _sgd_update(optimizer, grad, variable, learning_rate):
    # The casts are Keras' own (SGD.update_step), so the constants round as they do.
    dtype = variable.dtype
    lr = keras.ops.cast(learning_rate, dtype)
    grad = keras.ops.cast(grad, dtype)
    if optimizer.momentum == 0:
        tf.raw_ops.ResourceApplyGradientDescent(var=_handle(variable), alpha=lr, delta=grad)
        return
    index = private_api.optimizer_variable_index(optimizer, variable)
    tf.raw_ops.ResourceApplyKerasMomentum(
        var=_handle(variable), accum=_handle(optimizer.momentums[index]), lr=lr, grad=grad,
        momentum=keras.ops.cast(optimizer.momentum, dtype),
        use_nesterov=bool(optimizer.nesterov))
