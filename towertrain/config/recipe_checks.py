"""Checks of the training-recipe flags (learning rate schedule, optimizer
options, precision, gradient exchange), kept apart from params.py so each
file stays small. Every message starts with the flag at fault and names the
flag it conflicts with."""

LEARNING_RATE_SCHEDULES = ("cosine",)
LEARNING_RATE_SCALINGS = ("linear",)


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


def validate_recipe(p, fail):
    """fail(flag, value, message) raises ParamsError."""
    _validate_schedule(p, fail)
    _validate_optimizer_options(p, fail)
    _validate_precision(p, fail)
    _validate_accumulation(p, fail)


def _validate_schedule(p, fail):
    if p.learning_rate_schedule is not None and (
            p.learning_rate_schedule not in LEARNING_RATE_SCHEDULES):
        fail("learning_rate_schedule", p.learning_rate_schedule,
             f"must be one of {', '.join(LEARNING_RATE_SCHEDULES)}")
    if p.scale_learning_rate is not None and (
            p.scale_learning_rate not in LEARNING_RATE_SCALINGS):
        fail("scale_learning_rate", p.scale_learning_rate,
             f"must be one of {', '.join(LEARNING_RATE_SCALINGS)}")
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
        fail("learning_rate_schedule", "cosine", f"conflicts with --{flag}={getattr(p, flag)} "
             "(a staircase decay); drop one")
    if (p.num_epochs_per_decay is None) != (p.learning_rate_decay_factor is None):
        given, missing = (("num_epochs_per_decay", "learning_rate_decay_factor")
                          if p.num_epochs_per_decay is not None
                          else ("learning_rate_decay_factor", "num_epochs_per_decay"))
        fail(given, getattr(p, given), f"needs --{missing} as well")
    if p.num_epochs_per_decay is not None and not p.num_epochs_per_decay > 0:
        fail("num_epochs_per_decay", p.num_epochs_per_decay, "must be > 0")
    if p.learning_rate_decay_factor is not None and not 0 < p.learning_rate_decay_factor <= 1:
        fail("learning_rate_decay_factor", p.learning_rate_decay_factor, "must be in (0, 1]")
    if p.minimum_learning_rate < 0:
        fail("minimum_learning_rate", p.minimum_learning_rate, "must be >= 0")
    if p.minimum_learning_rate and not (decay or p.learning_rate_schedule):
        fail("minimum_learning_rate", p.minimum_learning_rate,
             "only applies to a decaying schedule (--num_epochs_per_decay or "
             "--learning_rate_schedule=cosine)")
    if p.num_learning_rate_warmup_epochs is not None and p.num_learning_rate_warmup_epochs < 0:
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
    if p.num_examples_per_epoch is not None:
        if p.num_examples_per_epoch < 1:
            fail("num_examples_per_epoch", p.num_examples_per_epoch, "must be >= 1")
        if p.data_dir is not None:
            fail("num_examples_per_epoch", p.num_examples_per_epoch,
                 f"conflicts with --data_dir={p.data_dir}, whose files set the epoch; "
                 "drop one")


def _validate_optimizer_options(p, fail):
    for flag, low, high in (("rmsprop_decay", 0, 1), ("rmsprop_momentum", 0, 1),
                            ("adam_beta1", 0, 1), ("adam_beta2", 0, 1)):
        if not low <= getattr(p, flag) < high:
            fail(flag, getattr(p, flag), f"must be in [{low}, {high})")
    for flag in ("rmsprop_epsilon", "adam_epsilon"):
        if not getattr(p, flag) > 0:
            fail(flag, getattr(p, flag), "must be > 0")
    for flag in ("gradient_clip", "global_norm_clip"):
        value = getattr(p, flag)
        if value is not None and not value > 0:
            fail(flag, value, "must be > 0")


def _validate_precision(p, fail):
    if p.sync_batch_norm:
        # Refused rather than ignored: a run must not claim global statistics
        # it does not compute.
        if p.variable_update == "independent":
            fail("sync_batch_norm", True, "needs one model trained by every tower "
                 "(--variable_update=replicated or parameter_server); independent towers "
                 "train separate models")
        if p.xla_compile:
            fail("sync_batch_norm", True, "conflicts with --xla_compile: each tower is "
                 "compiled on its own device, and the statistics cross towers; drop one")
    if p.use_fp16 and p.use_bf16:
        fail("use_fp16", True, "conflicts with --use_bf16; pick one half-precision type")
    if p.fp16_loss_scale is not None:
        if not p.fp16_loss_scale > 0:
            fail("fp16_loss_scale", p.fp16_loss_scale, "must be > 0")
    if p.fp16_inc_loss_scale_every_n < 1:
        fail("fp16_inc_loss_scale_every_n", p.fp16_inc_loss_scale_every_n, "must be >= 1")
    if (p.compact_gradient_transfer and p.use_bf16
            and p.resolved_all_reduce_spec == "nccl"):
        fail("compact_gradient_transfer", True, "with --use_bf16 sends bfloat16, which "
             "NCCL cannot carry; use --all_reduce_spec=psgpu or ring")


def _validate_accumulation(p, fail):
    steps = p.gradient_accumulation_steps
    if steps < 1:
        fail("gradient_accumulation_steps", steps, "must be >= 1 (1: no accumulation)")
    if steps > 1 and p.variable_update == "independent":
        fail("gradient_accumulation_steps", steps, "conflicts with "
             "--variable_update=independent: towers there update on their own and "
             "exchange nothing; use replicated or parameter_server, or drop the flag")
