"""--use_fp16 / --use_bf16: half-precision compute with float32 variables.

The model computes under Keras' mixed policy (float32 variables, float16 or
bfloat16 activations); batch norm keeps float32 parameters and statistics
(models.FusedBatchNormalization). float16's narrow range needs loss scaling:
the loss is multiplied by a scale before differentiation and the gradients
divided after. A fixed scale (--fp16_loss_scale, default 128, as
tf_cnn_benchmarks), or a dynamic one (--fp16_enable_auto_loss_scale): a step
whose gradients overflow applies nothing and halves the scale; after
--fp16_inc_loss_scale_every_n finite steps in a row it doubles. The decision
is one boolean for the whole step, so every copy makes the same one.
"""
import contextlib

import keras
import tensorflow as tf

from towertrain import private_api
from towertrain.errors import ParamsError
from towertrain.recipe.settings import HALF_FLAGS

DEFAULT_FIXED_LOSS_SCALE = 128.0
DEFAULT_AUTO_INITIAL_LOSS_SCALE = 2.0 ** 15  # Keras' LossScaleOptimizer's start
MINIMUM_LOSS_SCALE = 1.0


@contextlib.contextmanager
def policy_scope(precision):
    """Builds models under the run's mixed policy (the Precision section's
    keras_policy), restoring the global one after."""
    name = precision.keras_policy
    if name is None:
        yield
        return
    previous = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.mixed_precision.set_dtype_policy(previous)


def check_model(model, precision):
    """A model passed in must already compute in the requested precision, and
    one built under a half-precision policy needs the run's half precision
    (Keras' fit scales a mixed_float16 model's loss; a float32 run would not)."""
    name = precision.keras_policy
    if name is None:
        half = sorted({layer.dtype_policy.name for layer in private_api.flatten_layers(model)
                       if layer.weights and layer.dtype_policy.compute_dtype in ("float16", "bfloat16")})
        if half:
            fp16 = any("bfloat16" not in h for h in half)
            flag = HALF_FLAGS["float16" if fp16 else "bfloat16"]
            how = " (with loss scaling, as Keras' fit gives float16)" if fp16 else ""
            raise ParamsError(
                f"model '{model.name}' computes in half precision (dtype policy "
                f"{', '.join(half)}) but the run is float32 (neither --use_fp16 nor "
                f"--use_bf16): pass Params({flag}=True) to train it so{how}, or build the "
                "model under the float32 policy")
        return
    computes = {layer.dtype_policy.compute_dtype for layer in model.layers if layer.weights}
    if precision.half not in computes:
        raise ParamsError(f"--{precision.flag}: the model passed in computes in "
                          f"{', '.join(sorted(computes)) or 'float32'}; build it under "
                          f"keras.mixed_precision.set_dtype_policy('{name}')")


class LossScale:
    """The loss scale and its count of finite steps, engine variables on the CPU
    (saved in checkpoints, so a resumed run continues with the same scale)."""

    def __init__(self, initial, dynamic, increase_every_n):
        self.dynamic = dynamic
        self.increase_every_n = increase_every_n
        with tf.device("/cpu:0"):
            self.scale = tf.Variable(float(initial), trainable=False, dtype=tf.float32,
                                     name="loss_scale")
            self.good_steps = tf.Variable(0, trainable=False, dtype=tf.int64,
                                          name="loss_scale_good_steps")

    @classmethod
    def from_plan(cls, precision):
        """The run's loss scale: float16's narrow range needs one; None otherwise."""
        if precision.half != "float16":
            return None
        auto = precision.dynamic_loss_scale
        initial = precision.fp16_loss_scale or (DEFAULT_AUTO_INITIAL_LOSS_SCALE if auto
                                             else DEFAULT_FIXED_LOSS_SCALE)
        return cls(initial, auto, precision.fp16_inc_loss_scale_every_n)

    def value(self):
        return tf.identity(self.scale)

    def update(self, finite):
        """In the step, after the update decision; returns the scale for the next step."""
        if not self.dynamic:
            return self.value()

        def grow():
            count = self.good_steps.assign_add(1)
            ready = count >= self.increase_every_n
            self.scale.assign(tf.where(ready, self.scale * 2.0, self.scale))
            self.good_steps.assign(tf.where(ready, tf.zeros_like(count), count))
            return tf.identity(self.scale)

        def shrink():
            self.good_steps.assign(0)
            self.scale.assign(tf.maximum(self.scale / 2.0, MINIMUM_LOSS_SCALE))
            return tf.identity(self.scale)

        return tf.cond(finite, grow, shrink)

    def checkpoint_variables(self):
        return {"scale": self.scale, "good_steps": self.good_steps}

    def describe(self):
        if self.dynamic:
            return (f"dynamic, from {self.scale.numpy():g} (halved on overflow, doubled "
                    f"after {self.increase_every_n} finite steps)")
        return f"{self.scale.numpy():g} (fixed)"


def header_info(precision, loss_scale, native=None):
    """native: what towertrain.recipe.native_precision.describe says of the devices."""
    name = precision.keras_policy
    if name is None:
        return []
    if name == "float16":  # --fp16_vars
        policy = (f"{name} (float16 variables; the models' batch norm keeps float32 "
                  "parameters and statistics)")
    else:
        policy = f"{name} (float32 variables and batch-norm statistics)"
    info = [("Precision", [policy, native] if native else policy)]
    if loss_scale is not None:
        info.append(("Loss scale", loss_scale.describe()))
    return info
