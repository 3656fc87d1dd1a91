"""The recipe's settings, declared beside the code that reads them
(towertrain.recipe: the optimizer, precision, the loss, clipping), each
section with its own refusals. The learning rate's are
towertrain.plan.learning_rate.settings.

Each class is a run-plan section too (towertrain.plan builds it from Params
with towertrain.config.declare.take); towertrain.config.settings collects
their fields into Params, the flags and the docs.
"""
from typing import Optional

from towertrain.config.declare import ALWAYS, COMPARED, NOT_USED, WHEN_APPLIES, section, setting, tfcnn

OPTIMIZERS = ("sgd", "momentum", "rmsprop", "adam")
LOSS_TYPES = ("base_loss", "total_loss")
# The flag that asks for each half-precision compute dtype (messages name it).
HALF_FLAGS = {"float16": "use_fp16", "bfloat16": "use_bf16"}


@section("Optimizer options")
class Optimizer:
    optimizer: str = setting(
        "sgd", "Optimizer.",
        choices=OPTIMIZERS, group="Training", training_only=True,
        tfcnn=tfcnn("enum", "sgd", values=("momentum", "sgd", "rmsprop", "adam")),
        recorded=ALWAYS)
    momentum: float = setting(
        0.9, "Momentum for --optimizer=momentum (rmsprop uses --rmsprop_momentum).",
        group="Training", training_only=True, applies_with=("optimizer", ("momentum",)),
        tfcnn=tfcnn("float", 0.9),
        recorded=WHEN_APPLIES)
    nesterov: bool = setting(
        False, "Nesterov momentum (--optimizer=momentum).",
        training_only=True, applies_with=("optimizer", ("momentum",)),
        recorded=WHEN_APPLIES)
    rmsprop_decay: float = setting(
        0.9, "RMSProp decay (rho).",
        training_only=True, applies_with=("optimizer", ("rmsprop",)),
        tfcnn=tfcnn("float", 0.9),
        recorded=WHEN_APPLIES)
    rmsprop_momentum: float = setting(
        0.9, "RMSProp momentum.",
        training_only=True, applies_with=("optimizer", ("rmsprop",)),
        tfcnn=tfcnn("float", 0.9),
        recorded=WHEN_APPLIES)
    rmsprop_epsilon: float = setting(
        1.0, "RMSProp epsilon.",
        training_only=True, applies_with=("optimizer", ("rmsprop",)),
        tfcnn=tfcnn("float", 1.0),
        recorded=WHEN_APPLIES)
    adam_beta1: float = setting(
        0.9, "Adam beta1.",
        training_only=True, applies_with=("optimizer", ("adam",)), tfcnn=tfcnn("float", 0.9),
        recorded=WHEN_APPLIES)
    adam_beta2: float = setting(
        0.999, "Adam beta2.",
        training_only=True, applies_with=("optimizer", ("adam",)),
        tfcnn=tfcnn("float", 0.999),
        recorded=WHEN_APPLIES)
    adam_epsilon: float = setting(
        1e-08, "Adam epsilon.",
        training_only=True, applies_with=("optimizer", ("adam",)),
        tfcnn=tfcnn("float", 1e-08),
        recorded=WHEN_APPLIES)

    @staticmethod
    def refuse(p, fail):
        if not 0 <= p.momentum < 1:
            fail("momentum", p.momentum, "must be in [0, 1)")
        for flag, low, high in (("rmsprop_decay", 0, 1), ("rmsprop_momentum", 0, 1),
                                ("adam_beta1", 0, 1), ("adam_beta2", 0, 1)):
            if not low <= getattr(p, flag) < high:
                fail(flag, getattr(p, flag), f"must be in [{low}, {high})")
        for flag in ("rmsprop_epsilon", "adam_epsilon"):
            if not getattr(p, flag) > 0:
                fail(flag, getattr(p, flag), "must be > 0")


@section("Optimizer options")
class Clipping:
    gradient_clip: Optional[float] = setting(
        None, "Clip every gradient element to [-value, value].",
        training_only=True, recorded=COMPARED, tfcnn=tfcnn("float", None))
    global_norm_clip: Optional[float] = setting(
        None, "Clip the all-reduced gradient to this global norm (the same on every "
        "copy).",
        training_only=True, recorded=COMPARED)

    def __bool__(self):
        return self.gradient_clip is not None or self.global_norm_clip is not None

    @staticmethod
    def refuse(p, fail):
        for flag in ("gradient_clip", "global_norm_clip"):
            value = getattr(p, flag)
            if value is not None and not value > 0:
                fail(flag, value, "must be > 0")


@section("Precision and speed")
class Precision:
    use_fp16: bool = setting(
        False, "float16 compute, float32 variables, loss scaling.",
        tfcnn=tfcnn("boolean", False),
        recorded=ALWAYS)
    use_bf16: bool = setting(
        False, "bfloat16 compute, float32 variables.",
        recorded=ALWAYS)
    fp16_vars: bool = setting(
        False, "With --use_fp16: keep the trainable variables (and the optimizer's "
        "slots) in float16 too, not float32.",
        training_only=True, applies_with=("use_fp16", (True,)),
        tfcnn=tfcnn("boolean", False),
        recorded=ALWAYS)
    fp16_loss_scale: Optional[float] = setting(
        None, "Fixed loss scale with --use_fp16 (default 128), or the starting "
        "scale with auto loss scaling.",
        training_only=True, applies_with=("use_fp16", (True,)), tfcnn=tfcnn("float", None),
        recorded=WHEN_APPLIES)
    fp16_enable_auto_loss_scale: bool = setting(
        False, "Dynamic loss scale: halve it on overflow (nothing applied), double "
        "it after --fp16_inc_loss_scale_every_n finite steps.",
        training_only=True, applies_with=("use_fp16", (True,)),
        tfcnn=tfcnn("boolean", False),
        recorded=WHEN_APPLIES)
    fp16_inc_loss_scale_every_n: int = setting(
        1000, "See --fp16_enable_auto_loss_scale.",
        training_only=True, applies_with=("fp16_enable_auto_loss_scale", (True,)),
        tfcnn=tfcnn("integer", 1000),
        recorded=WHEN_APPLIES)
    allow_emulated_precision: bool = setting(
        False, "Run --use_fp16/--use_bf16 even where the devices only emulate it "
        "(fp16 on any CPU, bf16 on a CPU without avx512_bf16/AMX): ~14-100x "
        "slower than float32.")

    @property
    def half(self) -> Optional[str]:
        """The half-precision dtype's name, or None in float32."""
        return "float16" if self.use_fp16 else "bfloat16" if self.use_bf16 else None

    @property
    def flag(self) -> Optional[str]:
        """The flag that asked for the half precision (None in float32)."""
        return HALF_FLAGS.get(self.half)

    @property
    def keras_policy(self) -> Optional[str]:
        """Keras' dtype policy the model is built under (None: float32):
        mixed (float32 variables), or plain float16 with --fp16_vars."""
        if self.half == "float16" and self.fp16_vars:
            return "float16"
        return f"mixed_{self.half}" if self.half else None

    @property
    def dynamic_loss_scale(self) -> bool:
        """float16 loss scaling that adapts (--fp16_enable_auto_loss_scale)."""
        return self.half == "float16" and self.fp16_enable_auto_loss_scale

    @staticmethod
    def refuse(p, fail):
        if p.use_fp16 and p.use_bf16:
            fail("use_fp16", True, "conflicts with --use_bf16; pick one half-precision type")
        if p.fp16_loss_scale is not None:
            if not p.fp16_loss_scale > 0:
                fail("fp16_loss_scale", p.fp16_loss_scale, "must be > 0")
        if p.fp16_inc_loss_scale_every_n < 1:
            fail("fp16_inc_loss_scale_every_n", p.fp16_inc_loss_scale_every_n, "must be >= 1")
        if p.fp16_vars and p.resolved_all_reduce_spec == "nccl":
            # tf_cnn_benchmarks refuses the same: NCCL all-reduce of float16 variables.
            fail("fp16_vars", True, "not with --all_reduce_spec=nccl (as tf_cnn_benchmarks); "
                 "use psgpu or ring")


@section("Training")
class Loss:
    weight_decay: float = setting(
        0.0, "L2 weight decay on the variables the model marks for it (conv and "
        "dense kernels; never BN or biases).",
        training_only=True,
        tfcnn=tfcnn("float", 4e-05, "default 0 in towertrain, and only conv and dense kernels "
                    "decay (see 'Weight decay defaults' above)"),
        recorded=ALWAYS)
    single_l2_loss_op: bool = setting(
        False, "Compute the weight decay as one L2 loss of all decayed variables "
        "concatenated, instead of one per variable.",
        training_only=True, tfcnn=tfcnn("boolean", False))
    loss_type_to_report: str = setting(
        "total_loss", "The loss the step lines and summaries show: total_loss (with weight "
        "decay) or base_loss (without).",
        choices=LOSS_TYPES, training_only=True, scaling=NOT_USED,
        tfcnn=tfcnn("enum", "total_loss", values=("base_loss", "total_loss")))

    @staticmethod
    def refuse(p, fail):
        if not p.weight_decay >= 0:
            fail("weight_decay", p.weight_decay, "must be >= 0")
