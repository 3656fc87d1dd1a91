"""The recipe's settings, declared beside the code that reads them
(towertrain.recipe: the optimizer, the learning rate, precision, the loss,
clipping), each section with its own refusals.

Each class is a run-plan section too (towertrain.plan builds it from Params
with towertrain.config.declare.take); towertrain.config.settings collects
their fields into Params, the flags and the docs.
"""
from typing import Optional

from towertrain.config.declare import ALWAYS, NOT_USED, WHEN_APPLIES, section, setting, tfcnn

OPTIMIZERS = ("sgd", "momentum", "rmsprop", "adam")
LOSS_TYPES = ("base_loss", "total_loss")
LEARNING_RATE_SCHEDULES = ("cosine",)
LEARNING_RATE_SCALINGS = ("linear",)


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
        training_only=True, tfcnn=tfcnn("float", None))
    global_norm_clip: Optional[float] = setting(
        None, "Clip the all-reduced gradient to this global norm (the same on every "
        "copy).",
        training_only=True)

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


@section("Learning rate")
class LearningRateSettings:
    init_learning_rate: Optional[float] = setting(
        None, "Initial learning rate (default: the model's own recipe, "
        "tf_cnn_benchmarks' schedule for it: docs/migration.md).",
        group="Training", training_only=True, tfcnn=tfcnn("float", None))
    piecewise_learning_rate_schedule: Optional[str] = setting(
        None, "'LR0;E1;LR1;...;En;LRn': LR0 until epoch E1, then LR1, ... (replaces "
        "--init_learning_rate).",
        training_only=True, tfcnn=tfcnn("string", None))
    num_epochs_per_decay: Optional[float] = setting(
        None, "Multiply the learning rate by --learning_rate_decay_factor every "
        "this many epochs (staircase).",
        training_only=True, tfcnn=tfcnn("float", 0, unset=True))
    learning_rate_decay_factor: Optional[float] = setting(
        None, "See --num_epochs_per_decay.",
        training_only=True, tfcnn=tfcnn("float", 0, unset=True))
    minimum_learning_rate: float = setting(
        0.0, "Floor of a decaying learning rate.",
        training_only=True, tfcnn=tfcnn("float", 0))
    learning_rate_schedule: Optional[str] = setting(
        None, "cosine: decay to --minimum_learning_rate over the run.",
        choices=LEARNING_RATE_SCHEDULES, training_only=True)
    num_learning_rate_warmup_epochs: Optional[float] = setting(
        None, "Ramp the learning rate linearly from 0 over this many epochs.",
        training_only=True, tfcnn=tfcnn("float", 0, unset=True))
    scale_learning_rate: Optional[str] = setting(
        None, "linear: multiply the learning rate by global batch / "
        "--base_batch_size.",
        choices=LEARNING_RATE_SCALINGS, training_only=True)
    base_batch_size: Optional[int] = setting(
        None, "The global batch the base learning rate was tuned for (with "
        "--scale_learning_rate).",
        training_only=True, applies_with=("scale_learning_rate", ("linear",)))

    @staticmethod
    def refuse(p, fail):
        if p.init_learning_rate is not None and not p.init_learning_rate > 0:
            fail("init_learning_rate", p.init_learning_rate, "must be > 0")
        decay = p.num_epochs_per_decay is not None or p.learning_rate_decay_factor is not None
        if p.piecewise_learning_rate_schedule is not None:
            try:
                parse_piecewise(p.piecewise_learning_rate_schedule)
            except ValueError as err:
                fail("piecewise_learning_rate_schedule", p.piecewise_learning_rate_schedule,
                     str(err))
            # tf_cnn_benchmarks' get_learning_rate refuses the same ones.
            for flag in ("init_learning_rate", "num_epochs_per_decay",
                         "learning_rate_decay_factor", "learning_rate_schedule",
                         "minimum_learning_rate"):
                if getattr(p, flag) not in (None, 0):
                    fail("piecewise_learning_rate_schedule", p.piecewise_learning_rate_schedule,
                         f"conflicts with --{flag}={getattr(p, flag)}: the piecewise schedule "
                         "sets every learning rate; drop one")
        if p.learning_rate_schedule == "cosine" and decay:
            flag = ("num_epochs_per_decay" if p.num_epochs_per_decay is not None
                    else "learning_rate_decay_factor")
            fail("learning_rate_schedule", "cosine", f"conflicts with --{flag}="
                 f"{getattr(p, flag)} (a staircase decay); drop one")
        if (p.num_epochs_per_decay is None) != (p.learning_rate_decay_factor is None):
            given, missing = (("num_epochs_per_decay", "learning_rate_decay_factor")
                              if p.num_epochs_per_decay is not None
                              else ("learning_rate_decay_factor", "num_epochs_per_decay"))
            fail(given, getattr(p, given), f"needs --{missing} as well")
        if p.num_epochs_per_decay is not None and not p.num_epochs_per_decay > 0:
            fail("num_epochs_per_decay", p.num_epochs_per_decay, "must be > 0")
        if p.learning_rate_decay_factor is not None and \
                not 0 < p.learning_rate_decay_factor <= 1:
            fail("learning_rate_decay_factor", p.learning_rate_decay_factor,
                 "must be in (0, 1]")
        if p.minimum_learning_rate < 0:
            fail("minimum_learning_rate", p.minimum_learning_rate, "must be >= 0")
        if p.minimum_learning_rate and not (decay or p.learning_rate_schedule):
            fail("minimum_learning_rate", p.minimum_learning_rate,
                 "only applies to a decaying schedule (--num_epochs_per_decay or "
                 "--learning_rate_schedule=cosine)")
        if p.num_learning_rate_warmup_epochs is not None and \
                p.num_learning_rate_warmup_epochs < 0:
            fail("num_learning_rate_warmup_epochs", p.num_learning_rate_warmup_epochs,
                 "must be >= 0")
        if p.scale_learning_rate is not None and p.base_batch_size is None:
            fail("scale_learning_rate", p.scale_learning_rate,
                 "needs --base_batch_size (the global batch the base learning rate is for)")
        if p.scale_learning_rate is not None and p.variable_update == "independent":
            fail("scale_learning_rate", p.scale_learning_rate, "conflicts with "
                 "--variable_update=independent: each copy trains on its own --batch_size, "
                 "there is no global batch to scale by")
        if p.base_batch_size is not None:
            if p.base_batch_size < 1:
                fail("base_batch_size", p.base_batch_size, "must be >= 1")


def parse_piecewise(text):
    """'LR0;E1;LR1;...;En;LRn' -> ([LR0, ..., LRn], [E1, ..., En]): LR0 until
    epoch E1, then LR1, ...; raises ValueError saying what is wrong."""
    pieces = [piece.strip() for piece in str(text).split(";")]
    if len(pieces) % 2 == 0:
        raise ValueError("needs 'LR0;E1;LR1;...;En;LRn': an odd number of ';'-separated "
                         f"numbers (got {len(pieces)})")
    try:
        numbers = [float(piece) for piece in pieces]
    except ValueError:
        raise ValueError("needs 'LR0;E1;LR1;...;En;LRn' with numbers only") from None
    rates, epochs = numbers[0::2], numbers[1::2]
    if not all(rate > 0 for rate in rates):
        raise ValueError("every learning rate must be > 0")
    if not all(epoch > 0 for epoch in epochs) or any(
            later <= earlier for earlier, later in zip(epochs, epochs[1:])):
        raise ValueError("the epoch boundaries must be > 0 and increasing")
    return rates, epochs
