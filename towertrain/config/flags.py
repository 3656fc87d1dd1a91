"""absl flags with tf_cnn_benchmarks' names and meanings, and Params from them.

Params checks what any caller gets wrong; this module adds the checks that
need the command line itself: a flag given explicitly (FLAGS[name].present)
that its combination would ignore, even when its value equals the default.
"""
from absl import flags

from towertrain.config import params as params_lib

FLAGS = flags.FLAGS

# --help shows towertrain's flags in these groups, in this order.
GROUPS = (
    ("Model and data", ("model", "data_name", "data_dir", "input", "batch_size",
                        "data_format")),
    ("Devices and variables", ("device", "num_gpus", "variable_update",
                               "local_parameter_device", "all_reduce_spec")),
    ("Training", ("num_batches", "num_warmup_batches", "num_epochs", "display_every",
                  "optimizer", "momentum", "init_learning_rate", "weight_decay",
                  "tf_random_seed", "staging_depth")),
    ("Learning rate", ("piecewise_learning_rate_schedule", "num_epochs_per_decay",
                       "learning_rate_decay_factor", "minimum_learning_rate",
                       "learning_rate_schedule", "num_learning_rate_warmup_epochs",
                       "scale_learning_rate", "base_batch_size", "num_examples_per_epoch")),
    ("Optimizer options", ("nesterov", "rmsprop_decay", "rmsprop_momentum",
                           "rmsprop_epsilon", "adam_beta1", "adam_beta2", "adam_epsilon",
                           "gradient_clip", "global_norm_clip")),
    ("Precision and speed", ("use_fp16", "fp16_loss_scale", "fp16_enable_auto_loss_scale",
                             "fp16_inc_loss_scale_every_n", "use_bf16",
                             "compact_gradient_transfer", "xla_compile", "sync_batch_norm")),
    ("Summaries and traces", ("summary_verbosity", "save_summaries_steps", "summary_dir",
                              "print_training_accuracy", "trace_file", "trace_step",
                              "profile_steps")),
    ("Checkpoints and evaluation", ("train_dir", "save_model_steps", "save_model_secs",
                                    "max_ckpts_to_keep", "eval", "checkpoint",
                                    "eval_batch_size",
                                    "eval_during_training_every_n_steps")),
    ("Cluster", ("worker_hosts", "task_index", "collective_timeout_secs")),
    ("Output", ("verbose",)),
)

# Flags --eval never reads (evaluation restores a checkpoint and runs the model
# once over the eval set). Those whose default is None are checked in Params.
TRAINING_ONLY = ("num_warmup_batches", "display_every", "optimizer", "momentum",
                 "weight_decay", "max_ckpts_to_keep", "staging_depth", "nesterov",
                 "rmsprop_decay", "rmsprop_momentum", "rmsprop_epsilon", "adam_beta1",
                 "adam_beta2", "adam_epsilon", "minimum_learning_rate",
                 "fp16_enable_auto_loss_scale", "fp16_inc_loss_scale_every_n",
                 "compact_gradient_transfer", "sync_batch_norm")


def define_flags():
    """Defines the flags once per process (absl flags are global)."""
    if "variable_update" in FLAGS:
        return
    flags.DEFINE_string("model", "trivial", "Model name from the registry (towertrain.models).")
    flags.DEFINE_integer("batch_size", None, "Batch size per device (default: the model's).")
    flags.DEFINE_integer("num_batches", None, "Number of timed training steps (default: 100; "
                         "not with --num_epochs).")
    flags.DEFINE_integer("num_warmup_batches", 10, "Untimed steps before the timed ones.")
    flags.DEFINE_integer("display_every", 10, "Print a step line every this many steps.")
    flags.DEFINE_enum("device", None, params_lib.DEVICES,
                      "Compute device type (default: gpu if one is present, else cpu).")
    flags.DEFINE_integer("num_gpus", 1, "Number of towers: GPUs, or logical CPU devices "
                         "with --device=cpu.")
    flags.DEFINE_enum("data_format", None, params_lib.DATA_FORMATS,
                      "Image layout (default: NCHW on gpu, NHWC on cpu).")
    flags.DEFINE_enum("variable_update", "parameter_server", params_lib.VARIABLE_UPDATES,
                      "How towers share variables.")
    flags.DEFINE_enum("local_parameter_device", None, params_lib.DEVICES,
                      "parameter_server only: where the variables live (default: --device).")
    flags.DEFINE_enum("all_reduce_spec", None, params_lib.ALL_REDUCE_SPECS,
                      "replicated only: the all-reduce (default: nccl on gpu, pscpu on cpu).")
    flags.DEFINE_enum("optimizer", "sgd", params_lib.OPTIMIZERS, "Optimizer.")
    flags.DEFINE_float("momentum", 0.9, "Momentum for --optimizer=momentum and rmsprop.")
    flags.DEFINE_float("weight_decay", 0.0, "L2 weight decay on the variables the model "
                       "marks for it (conv and dense kernels; never BN or biases).")
    flags.DEFINE_float("init_learning_rate", None,
                       "Initial learning rate (default: the model's).")
    flags.DEFINE_integer("tf_random_seed", 1234, "Seed for initializers and synthetic data.")
    flags.DEFINE_enum("data_name", None, params_lib.DATA_NAMES,
                      "Dataset name (default: the model's); sets the number of classes.")
    flags.DEFINE_string("train_dir", None, "Directory for checkpoints; a run with the same "
                        "train_dir resumes from its latest checkpoint.")
    flags.DEFINE_integer("save_model_steps", None, "Save a checkpoint every this many steps.")
    flags.DEFINE_float("save_model_secs", None, "Save a checkpoint every this many seconds.")
    flags.DEFINE_integer("max_ckpts_to_keep", 5, "Checkpoints kept in --train_dir.")
    flags.DEFINE_boolean("eval", False, "Evaluate top-1/top-5 accuracy of a checkpoint "
                         "instead of training; --model and --data_name default to those "
                         "the --train_dir was trained with.")
    flags.DEFINE_string("checkpoint", None, "With --eval: the checkpoint to evaluate "
                        "(default: the latest in --train_dir).")
    flags.DEFINE_integer("eval_batch_size", None, "Batch size per device for evaluation "
                         "(default: the training batch per device).")
    flags.DEFINE_integer("eval_during_training_every_n_steps", None,
                         "Evaluate every this many training steps.")
    flags.DEFINE_string("data_dir", None, "Directory of the dataset's files (cifar10 binary "
                        "batches or imagenet TFRecords); unset: synthetic data.")
    flags.DEFINE_enum("input", "dataset", params_lib.INPUTS,
                      "With --data_dir: dataset (a tf.data pipeline) or queue (a FIFOQueue "
                      "filled by threads).")
    flags.DEFINE_integer("staging_depth", 1, "With --data_dir: batches staged on each device "
                         "ahead of compute; 0 turns staging off. Synthetic data is never "
                         "staged.")
    flags.DEFINE_integer("num_epochs", None, "Train this many passes over --data_dir "
                         "instead of --num_batches steps.")
    _define_recipe_flags()
    _define_observe_flags()
    _define_cluster_flags()
    flags.DEFINE_boolean("verbose", False, "Show TensorFlow's own log output (C++ notices "
                         "such as oneDNN's, INFO logging from TensorFlow and Keras), "
                         "hidden by default. TF_CPP_MIN_LOG_LEVEL=0 shows the C++ part "
                         "only, --verbosity=0 the Python part only.")


def explicit_flags():
    """Names of the flags given on the command line (default-valued ones too)."""
    return {name for name in params_lib.Params.__dataclass_fields__
            if name in FLAGS and FLAGS[name].present}


def _define_cluster_flags():
    """Multi-worker training (towertrain.engine.distributed.cluster)."""
    flags.DEFINE_string("worker_hosts", None, "Multi-worker: comma-separated host:port of "
                        "every worker, the chief first; needs --variable_update="
                        "collective_all_reduce (default: TF_CONFIG, else one process).")
    flags.DEFINE_integer("task_index", 0, "Multi-worker: this worker's index in "
                         "--worker_hosts; 0 is the chief (checkpoints, output).")
    flags.DEFINE_float("collective_timeout_secs", None, "Multi-worker: a collective that "
                       "does not complete in this many seconds stops the run (a dead or "
                       "unreachable worker) (default: 60).")


def _define_recipe_flags():
    """Learning rate schedule, optimizer options, precision (tf_cnn_benchmarks names)."""
    from towertrain.config import recipe_checks as params_recipe
    flags.DEFINE_string("piecewise_learning_rate_schedule", None,
                        "'LR0;E1;LR1;...;En;LRn': LR0 until epoch E1, then LR1, ... "
                        "(replaces --init_learning_rate).")
    flags.DEFINE_float("num_epochs_per_decay", None, "Multiply the learning rate by "
                       "--learning_rate_decay_factor every this many epochs (staircase).")
    flags.DEFINE_float("learning_rate_decay_factor", None, "See --num_epochs_per_decay.")
    flags.DEFINE_float("minimum_learning_rate", 0.0, "Floor of a decaying learning rate.")
    flags.DEFINE_enum("learning_rate_schedule", None, params_recipe.LEARNING_RATE_SCHEDULES,
                      "cosine: decay to --minimum_learning_rate over the run.")
    flags.DEFINE_float("num_learning_rate_warmup_epochs", None, "Ramp the learning rate "
                       "linearly from 0 over this many epochs.")
    flags.DEFINE_enum("scale_learning_rate", None, params_recipe.LEARNING_RATE_SCALINGS,
                      "linear: multiply the learning rate by global batch / "
                      "--base_batch_size.")
    flags.DEFINE_integer("base_batch_size", None, "The global batch the base learning "
                         "rate was tuned for (with --scale_learning_rate).")
    flags.DEFINE_integer("num_examples_per_epoch", None, "Epoch length for synthetic data "
                         "(epoch-based schedules); --data_dir sets it from its files.")
    flags.DEFINE_boolean("nesterov", False, "Nesterov momentum (--optimizer=momentum).")
    flags.DEFINE_float("rmsprop_decay", 0.9, "RMSProp decay (rho).")
    flags.DEFINE_float("rmsprop_momentum", 0.9, "RMSProp momentum.")
    flags.DEFINE_float("rmsprop_epsilon", 1.0, "RMSProp epsilon.")
    flags.DEFINE_float("adam_beta1", 0.9, "Adam beta1.")
    flags.DEFINE_float("adam_beta2", 0.999, "Adam beta2.")
    flags.DEFINE_float("adam_epsilon", 1e-8, "Adam epsilon.")
    flags.DEFINE_float("gradient_clip", None, "Clip every gradient element to "
                       "[-value, value].")
    flags.DEFINE_float("global_norm_clip", None, "Clip the all-reduced gradient to this "
                       "global norm (the same on every copy).")
    flags.DEFINE_boolean("use_fp16", False, "float16 compute, float32 variables, loss "
                         "scaling.")
    flags.DEFINE_float("fp16_loss_scale", None, "Fixed loss scale with --use_fp16 "
                       "(default 128), or the starting scale with auto loss scaling.")
    flags.DEFINE_boolean("fp16_enable_auto_loss_scale", False, "Dynamic loss scale: halve "
                         "it on overflow (nothing applied), double it after "
                         "--fp16_inc_loss_scale_every_n finite steps.")
    flags.DEFINE_integer("fp16_inc_loss_scale_every_n", 1000, "See "
                         "--fp16_enable_auto_loss_scale.")
    flags.DEFINE_boolean("use_bf16", False, "bfloat16 compute, float32 variables.")
    flags.DEFINE_boolean("compact_gradient_transfer", False, "All-reduce gradients in "
                         "float16 (bfloat16 with --use_bf16); replicated only.")
    flags.DEFINE_boolean("xla_compile", False, "Compile each tower's forward and backward "
                         "with XLA.")
    flags.DEFINE_boolean("sync_batch_norm", False, "Batch-norm statistics over the whole "
                         "global batch instead of each tower's slice.")


def _define_observe_flags():
    """TensorBoard summaries, traces and profiles (tf_cnn_benchmarks names)."""
    flags.DEFINE_integer("summary_verbosity", 0, "TensorBoard summaries: 0 off; 1 loss, "
                         "learning rate, images/sec, gradient norm, loss scale, training "
                         "top-1, input wait; 2 also gradient histograms; 3 also weight "
                         "histograms.")
    flags.DEFINE_integer("save_summaries_steps", 100, "Write summaries every this many "
                         "steps.")
    flags.DEFINE_string("summary_dir", None, "Where event files go (default: --train_dir; "
                        "eval results in its eval/ subfolder).")
    flags.DEFINE_boolean("print_training_accuracy", False, "Print training top-1 on the "
                         "step lines.")
    flags.DEFINE_string("trace_file", None, "Write a Chrome/Perfetto trace (.json) of one "
                        "step: each device's compute, the copies and the all-reduce.")
    flags.DEFINE_integer("trace_step", None, "The global step --trace_file traces "
                         "(default: the first after warmup).")
    flags.DEFINE_string("profile_steps", None, "'A,B': a TensorBoard profile of global "
                        "steps A to B, under the summary directory.")


def params_from_flags():
    """A Params from parsed flags; raises ParamsError naming the bad flag."""
    names = [field for field in params_lib.Params.__dataclass_fields__]
    params = params_lib.Params(**{name: FLAGS[name].value for name in names})
    check_command_line(params, explicit_flags())
    return params


def _fail(flag, value, message):
    raise params_lib.ParamsError(f"--{flag}={value}: {message}")


def check_command_line(p, explicit):
    """Raises ParamsError for an explicitly given flag that `p`'s combination
    ignores; the message names the flag first, then the one that overrides it."""
    if p.eval:
        for flag in TRAINING_ONLY:
            if flag in explicit:
                _fail(flag, getattr(p, flag), "only applies to training; --eval ignores it")
        if "batch_size" in explicit and p.eval_batch_size is not None:
            _fail("batch_size", p.batch_size, f"--eval uses --eval_batch_size="
                  f"{p.eval_batch_size} instead; drop one")
    # Library users may call Trainer.evaluate() at any time, so only the CLI
    # knows that no eval will run.
    if p.eval_batch_size is not None and not (p.eval or
                                              p.eval_during_training_every_n_steps):
        _fail("eval_batch_size", p.eval_batch_size, "only applies with --eval or "
              "--eval_during_training_every_n_steps")
    if "momentum" in explicit and p.optimizer != "momentum":
        _fail("momentum", p.momentum, "only applies to --optimizer=momentum "
              f"(got --optimizer={p.optimizer}; rmsprop has --rmsprop_momentum)")
    for prefix, optimizer in (("rmsprop_", "rmsprop"), ("adam_", "adam")):
        for name in sorted(explicit):
            if name.startswith(prefix) and p.optimizer != optimizer:
                _fail(name, getattr(p, name), f"only applies to --optimizer={optimizer} "
                      f"(got --optimizer={p.optimizer})")
    if "max_ckpts_to_keep" in explicit and not p.train_dir:
        _fail("max_ckpts_to_keep", p.max_ckpts_to_keep,
              "needs --train_dir (nothing is saved without one)")
    if p.data_dir is None:
        # The CLI's synthetic input lives on the devices: no tf.data, no
        # staging, no epochs. (Library users may pass their own input, so
        # Params cannot check these.)
        if "input" in explicit:
            _fail("input", p.input, "needs --data_dir (synthetic data is generated on "
                  "the devices)")
        if "staging_depth" in explicit and p.staging_depth > 0:
            _fail("staging_depth", p.staging_depth, "needs --data_dir (synthetic data is "
                  "generated on each device and never staged)")
        if p.num_epochs is not None and p.num_examples_per_epoch is None:
            _fail("num_epochs", p.num_epochs, "needs --data_dir, or "
                  "--num_examples_per_epoch for synthetic data")
