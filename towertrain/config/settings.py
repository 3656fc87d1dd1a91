"""Every setting of a run, defined once: name, type, default, help, --help
group, whether --eval ignores it, which mode reads it, and how the scaling
command treats it.

Generated from this table: the fields of towertrain.Params (`declare_fields`),
the absl flags of `python -m towertrain` (towertrain.config.flags), their
--help groups (`groups`), the flags --eval refuses (`training_only`), the
flags a mode ignores (`mode_dependent`, checked by
towertrain.config.mode_checks) and the scaling command's lists (`for_scaling`). A new setting is one `Setting` line
here, plus its check in Params when it needs one.
"""
import dataclasses
from typing import Optional, Tuple

from towertrain.config.recipe_checks import LEARNING_RATE_SCALINGS, LEARNING_RATE_SCHEDULES

# Choices of the enum settings; Params checks values against the same tuples.
VARIABLE_UPDATES = ("parameter_server", "replicated", "independent", "collective_all_reduce")
# replicated takes the first four; collective_all_reduce the rest: tf_cnn_benchmarks'
# local/cross grammar (sum on the worker, then one exchange per worker) or flat.
ALL_REDUCE_SPECS = ("nccl", "pscpu", "psgpu", "ring",
                    "pscpu/xring", "psgpu/xring", "nccl/xring", "scatter/xring", "collective")
OPTIMIZERS = ("sgd", "momentum", "rmsprop", "adam")
DEVICES = ("cpu", "gpu")
DATA_FORMATS = ("NCHW", "NHWC")
DATA_NAMES = ("cifar10", "imagenet")
INPUTS = ("dataset", "queue")
# The modes that exchange gradients (--all_reduce_spec, --gradient_repacking).
EXCHANGES = ("variable_update", ("replicated", "collective_all_reduce"))
CLUSTER_SOURCES = ("auto", "flags", "tf_config", "slurm")
COLLECTIVE_IMPLEMENTATIONS = ("auto", "ring", "nccl")  # TensorFlow's CommunicationImplementation
RESIZE_METHODS = ("crop", "nearest", "bilinear", "bicubic", "area", "round_robin")
LOSS_TYPES = ("base_loss", "total_loss")
VARIABLE_CONSISTENCIES = ("strong", "relaxed")

# Types: each names its absl DEFINE_<type> and the Python type of its Params field.
STRING, INTEGER, FLOAT, BOOLEAN, ENUM = "string", "integer", "float", "boolean", "enum"
PYTHON_TYPES = {STRING: str, INTEGER: int, FLOAT: float, BOOLEAN: bool, ENUM: str}

# How `python -m towertrain.scaling` treats a setting: it reads it like
# training does, sets it itself for each configuration, or never uses it
# (it times steps on synthetic data). The last two are errors when given.
SHARED, PER_CONFIGURATION, NOT_USED = "shared", "set per configuration", "not used"


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    type: str  # STRING, INTEGER, FLOAT, BOOLEAN or ENUM
    default: object
    help: str
    choices: Optional[Tuple[str, ...]] = None  # ENUM only
    training_only: bool = False  # --eval refuses it (evaluation never reads it)
    scaling: str = SHARED
    param: bool = True  # False: a command-line-only flag, no Params field
    group: str = ""  # the --help group; set by `group`
    # (mode setting, values): only those values of the mode read this setting;
    # given with another, it is an error (towertrain.config.mode_checks).
    applies_with: Optional[Tuple[str, Tuple[object, ...]]] = None
    # ENUM only: the flag also takes its values in other case (tf_cnn_benchmarks'
    # --device=GPU); the parsed value is always the listed spelling.
    case_sensitive: bool = True

    def __post_init__(self):
        # A malformed entry fails on import, naming itself.
        if self.type not in PYTHON_TYPES:
            raise ValueError(f"setting {self.name}: unknown type {self.type!r}")
        if (self.type == ENUM) != (self.choices is not None):
            raise ValueError(f"setting {self.name}: choices go with type ENUM, and only there")
        if not self.case_sensitive and self.type != ENUM:
            raise ValueError(f"setting {self.name}: case_sensitive=False is for ENUM only")
        if self.scaling not in (SHARED, PER_CONFIGURATION, NOT_USED):
            raise ValueError(f"setting {self.name}: unknown scaling {self.scaling!r}")
        if self.applies_with is not None and (
                len(self.applies_with) != 2 or not isinstance(self.applies_with[1], tuple)):
            raise ValueError(f"setting {self.name}: applies_with is (mode name, (values, ...))")

    @property
    def python_type(self):
        """The Params field's annotation: Optional[...] when the default is None."""
        base = PYTHON_TYPES[self.type]
        return base if self.default is not None else Optional[base]


def group(title, *settings):
    """The settings of one --help group, in their --help order."""
    return tuple(dataclasses.replace(s, group=title) for s in settings)


def shown_default(name):
    """What --help and docs/flags.md show as the default of a training flag
    whose None means a value: --model's is the registry's default model."""
    if name == "model":
        from towertrain.models import catalog  # names without Keras
        return catalog.DEFAULT_MODEL
    return None


# The table, in --help order. Params' fields follow the same order.
SETTINGS = (
    *group("Model and data",
        # None, not "trivial", so Trainer(model=<keras model>) can tell an
        # explicit Params(model=...) apart and refuse it (Params.resolved_model).
        Setting("model", STRING, None, "Model name from the registry "
                "(towertrain.models)."),
        Setting("data_name", ENUM, None, "Dataset name (default: the model's); sets the "
                "number of classes.", choices=DATA_NAMES),
        Setting("data_dir", STRING, None, "Directory of the dataset's files (cifar10 binary "
                "batches or imagenet TFRecords); unset: synthetic data.", scaling=NOT_USED),
        Setting("input", ENUM, "dataset", "With --data_dir: dataset (a tf.data pipeline) or "
                "queue (a FIFOQueue filled by threads).", choices=INPUTS, scaling=NOT_USED),
        Setting("batch_size", INTEGER, None, "Batch size per device (default: the model's)."),
        Setting("data_format", ENUM, None, "Image layout (default: NCHW on gpu, NHWC on cpu).",
                choices=DATA_FORMATS),
        Setting("distortions", BOOLEAN, False, "Training augmentation: cifar10 random pad-4 "
                "crops and flips (off: none); imagenet adds color distortions to its "
                "always-on random crop and flip.", training_only=True, scaling=NOT_USED),
        Setting("resize_method", ENUM, None, "imagenet resize (default bilinear): nearest, bilinear, "
                "bicubic, area, round_robin (the four by example position) or crop (a "
                "random/central crop of the input size, no resize).",
                choices=RESIZE_METHODS, scaling=NOT_USED)),
    *group("Devices and variables",
        Setting("device", ENUM, None, "Compute device type (default: gpu if one is present, "
                "else cpu).", choices=DEVICES, case_sensitive=False),
        Setting("num_gpus", INTEGER, 1, "Number of towers: GPUs, or logical CPU devices with "
                "--device=cpu.", scaling=PER_CONFIGURATION),
        Setting("variable_update", ENUM, "parameter_server", "How towers share variables.",
                choices=VARIABLE_UPDATES, scaling=PER_CONFIGURATION),
        Setting("local_parameter_device", ENUM, None, "parameter_server only: where the "
                "variables live (default: --device).", choices=DEVICES, case_sensitive=False,
                scaling=PER_CONFIGURATION,
                applies_with=("variable_update", ("parameter_server",))),
        Setting("all_reduce_spec", ENUM, None, "The gradient exchange. replicated: nccl, "
                "pscpu, psgpu or ring (default: nccl on gpu, pscpu on cpu). "
                "collective_all_reduce: local/xring sums on each worker (pscpu on cpu, nccl "
                "or psgpu on gpu), then one cross-worker collective per pack from one member "
                "per worker; scatter/xring reduce-scatters each pack over the worker's devices, "
                "each device sums its shard across workers (all L devices' links at once), "
                "then all-gathers (Horovod's hierarchy; NCCL on gpu); collective sums over "
                "every device of every worker flatly "
                "(default: pscpu/xring on cpu, collective on gpu).", choices=ALL_REDUCE_SPECS,
                scaling=PER_CONFIGURATION, applies_with=EXCHANGES),
        Setting("gradient_repacking", INTEGER, 0, "Cut each dtype's gradients into this many "
                "packs of about equal bytes, in reverse layer order, each reduced on its own "
                "so its exchange can start while the backward pass still runs (0: one pack "
                "per dtype). replicated and collective_all_reduce.", training_only=True,
                applies_with=EXCHANGES,
                # The scaling command also times modes that refuse it (parameter_server).
                scaling=NOT_USED),
        Setting("gradient_pack_mb", FLOAT, None, "Cut each dtype's gradients into packs of "
                "at most this many MB (10**6 bytes; PyTorch DDP's buckets are 25 MB, "
                "Horovod's fusion buffer 64 MB), about equal, in reverse layer order, each "
                "reduced as soon as its gradients exist (0: one pack per dtype; at most 1000 "
                "packs per dtype). Default: 25 on --device=gpu, one pack per dtype on cpu. Not "
                "with --gradient_repacking (packs are counted or sized, not both) nor "
                "--xla_compile. replicated and collective_all_reduce.", training_only=True,
                applies_with=EXCHANGES, scaling=NOT_USED),
        Setting("gpu_indices", STRING, None, "--device=gpu: the physical GPUs the towers run "
                "on, in tower order (the order of the ring all-reduce), e.g. '2,3,0,1'; as "
                "many as --num_gpus (default: 0..num_gpus-1); --eval and --forward_only "
                "run on them too.", scaling=NOT_USED),
        Setting("variable_consistency", ENUM, "strong", "replicated only: strong applies "
                "each step's all-reduced gradients in that step; relaxed applies them one "
                "step later, so the exchange overlaps the next step's compute (the variables "
                "lag one step).", choices=VARIABLE_CONSISTENCIES, training_only=True,
                scaling=NOT_USED, applies_with=("variable_update", ("replicated",)))),
    *group("Training",
        Setting("num_batches", INTEGER, None, "Number of timed training steps (default: 100; "
                "not with --num_epochs).", training_only=True),
        Setting("num_warmup_batches", INTEGER, 10, "Untimed steps before the timed ones.",
                training_only=True),
        Setting("num_epochs", INTEGER, None, "Train this many passes over --data_dir (on "
                "synthetic data, over the dataset's known size) instead of --num_batches "
                "steps.", training_only=True, scaling=NOT_USED),
        Setting("gradient_accumulation_steps", INTEGER, 1, "Sum the gradients of this many "
                "consecutive global batches on each device, then exchange and apply one "
                "update of their mean; a step is one update.", training_only=True),
        Setting("display_every", INTEGER, 10, "Print a step line every this many steps.",
                training_only=True, scaling=NOT_USED),
        Setting("display_perf_ewma", FLOAT, None, "Step lines show images/sec as an "
                "exponentially weighted average of step times with this weight on the "
                "newest step (0 < w <= 1) instead of the plain average.",
                training_only=True, scaling=NOT_USED),
        Setting("optimizer", ENUM, "sgd", "Optimizer.", choices=OPTIMIZERS,
                training_only=True),
        Setting("momentum", FLOAT, 0.9, "Momentum for --optimizer=momentum (rmsprop uses "
                "--rmsprop_momentum).",
                training_only=True,
                applies_with=("optimizer", ("momentum",))),
        Setting("init_learning_rate", FLOAT, None, "Initial learning rate (default: the "
                "model's own recipe, tf_cnn_benchmarks' schedule for it: docs/migration.md).",
                training_only=True),
        Setting("weight_decay", FLOAT, 0.0, "L2 weight decay on the variables the model marks "
                "for it (conv and dense kernels; never BN or biases).", training_only=True),
        Setting("single_l2_loss_op", BOOLEAN, False, "Compute the weight decay as one L2 "
                "loss of all decayed variables concatenated, instead of one per variable.",
                training_only=True),
        Setting("loss_type_to_report", ENUM, "total_loss", "The loss the step lines and "
                "summaries show: total_loss (with weight decay) or base_loss (without).",
                choices=LOSS_TYPES, training_only=True, scaling=NOT_USED),
        Setting("tf_random_seed", INTEGER, 1234, "Seed for initializers, synthetic data, dropout "
                "and augmentation (every draw: docs/checkpoints.md, 'Randomness and exactness')."),
        Setting("staging_depth", INTEGER, 1, "With --data_dir: batches staged on each device "
                "ahead of compute; 0 turns staging off. Synthetic data is never staged.",
                training_only=True, scaling=NOT_USED)),
    *group("Learning rate",
        Setting("piecewise_learning_rate_schedule", STRING, None, "'LR0;E1;LR1;...;En;LRn': "
                "LR0 until epoch E1, then LR1, ... (replaces --init_learning_rate).",
                training_only=True),
        Setting("num_epochs_per_decay", FLOAT, None, "Multiply the learning rate by "
                "--learning_rate_decay_factor every this many epochs (staircase).",
                training_only=True),
        Setting("learning_rate_decay_factor", FLOAT, None, "See --num_epochs_per_decay.",
                training_only=True),
        Setting("minimum_learning_rate", FLOAT, 0.0, "Floor of a decaying learning rate.",
                training_only=True),
        Setting("learning_rate_schedule", ENUM, None, "cosine: decay to "
                "--minimum_learning_rate over the run.", choices=LEARNING_RATE_SCHEDULES,
                training_only=True),
        Setting("num_learning_rate_warmup_epochs", FLOAT, None, "Ramp the learning rate "
                "linearly from 0 over this many epochs.", training_only=True),
        Setting("scale_learning_rate", ENUM, None, "linear: multiply the learning rate by "
                "global batch / --base_batch_size.", choices=LEARNING_RATE_SCALINGS,
                training_only=True),
        Setting("base_batch_size", INTEGER, None, "The global batch the base learning rate "
                "was tuned for (with --scale_learning_rate).", training_only=True,
                applies_with=("scale_learning_rate", ("linear",))),
        Setting("num_examples_per_epoch", INTEGER, None, "Epoch length for synthetic data "
                "(default with --num_epochs or an epoch-based learning rate: the dataset's "
                "known size, ImageNet 1,281,167, CIFAR-10 50,000); --data_dir sets it from "
                "its files.",
                training_only=True)),
    *group("Optimizer options",
        Setting("nesterov", BOOLEAN, False, "Nesterov momentum (--optimizer=momentum).",
                training_only=True,
                applies_with=("optimizer", ("momentum",))),
        Setting("rmsprop_decay", FLOAT, 0.9, "RMSProp decay (rho).", training_only=True,
                applies_with=("optimizer", ("rmsprop",))),
        Setting("rmsprop_momentum", FLOAT, 0.9, "RMSProp momentum.", training_only=True,
                applies_with=("optimizer", ("rmsprop",))),
        Setting("rmsprop_epsilon", FLOAT, 1.0, "RMSProp epsilon.", training_only=True,
                applies_with=("optimizer", ("rmsprop",))),
        Setting("adam_beta1", FLOAT, 0.9, "Adam beta1.", training_only=True,
                applies_with=("optimizer", ("adam",))),
        Setting("adam_beta2", FLOAT, 0.999, "Adam beta2.", training_only=True,
                applies_with=("optimizer", ("adam",))),
        Setting("adam_epsilon", FLOAT, 1e-08, "Adam epsilon.", training_only=True,
                applies_with=("optimizer", ("adam",))),
        Setting("gradient_clip", FLOAT, None, "Clip every gradient element to [-value, "
                "value].", training_only=True),
        Setting("global_norm_clip", FLOAT, None, "Clip the all-reduced gradient to this "
                "global norm (the same on every copy).", training_only=True)),
    *group("Precision and speed",
        Setting("use_fp16", BOOLEAN, False, "float16 compute, float32 variables, loss "
                "scaling."),
        Setting("fp16_vars", BOOLEAN, False, "With --use_fp16: keep the trainable variables "
                "(and the optimizer's slots) in float16 too, not float32.",
                training_only=True, applies_with=("use_fp16", (True,))),
        Setting("fp16_loss_scale", FLOAT, None, "Fixed loss scale with --use_fp16 (default "
                "128), or the starting scale with auto loss scaling.", training_only=True,
                applies_with=("use_fp16", (True,))),
        Setting("fp16_enable_auto_loss_scale", BOOLEAN, False, "Dynamic loss scale: halve it "
                "on overflow (nothing applied), double it after --fp16_inc_loss_scale_every_n "
                "finite steps.", training_only=True,
                applies_with=("use_fp16", (True,))),
        Setting("fp16_inc_loss_scale_every_n", INTEGER, 1000, "See "
                "--fp16_enable_auto_loss_scale.", training_only=True,
                applies_with=("fp16_enable_auto_loss_scale", (True,))),
        Setting("use_bf16", BOOLEAN, False, "bfloat16 compute, float32 variables."),
        Setting("allow_emulated_precision", BOOLEAN, False, "Run --use_fp16/--use_bf16 even "
                "where the devices only emulate it (fp16 on any CPU, bf16 on a CPU without "
                "avx512_bf16/AMX): ~14-100x slower than float32."),
        Setting("compact_gradient_transfer", BOOLEAN, False, "All-reduce gradients in float16 "
                "(bfloat16 with --use_bf16); replicated only.", training_only=True,
                applies_with=("variable_update", ("replicated",))),
        Setting("xla_compile", BOOLEAN, False, "Compile each tower's forward and backward "
                "with XLA."),
        Setting("xla", BOOLEAN, False, "XLA auto-clustering (tf.config.optimizer.set_jit): "
                "TensorFlow compiles the clusters of the step it can and runs the rest as "
                "usual; unless --device=gpu it also sets TF_XLA_FLAGS=--tf_xla_cpu_global_jit "
                "before TensorFlow lists its devices.", scaling=NOT_USED),
        Setting("sync_batch_norm", BOOLEAN, False, "Batch-norm statistics over the whole "
                "global batch instead of each tower's slice.", training_only=True)),
    *group("Summaries and traces",
        Setting("summary_verbosity", INTEGER, 0, "TensorBoard summaries: 0 off; 1 loss, "
                "learning rate, images/sec, gradient norm, loss scale, training top-1, input "
                "wait; 2 also gradient histograms; 3 also weight histograms.",
                scaling=NOT_USED),
        Setting("save_summaries_steps", INTEGER, 100, "Write summaries every this many steps "
                "(0: none, as in tf_cnn_benchmarks).",
                scaling=NOT_USED),
        Setting("summary_dir", STRING, None, "Where event files go (default: --train_dir; "
                "eval results in its eval/ subfolder).", scaling=NOT_USED),
        Setting("print_training_accuracy", BOOLEAN, False, "Print training top-1 on the step "
                "lines.", scaling=NOT_USED),
        Setting("trace_file", STRING, None, "Write a Chrome/Perfetto trace (.json) of one "
                "step: each device's compute, the copies and the all-reduce.",
                scaling=NOT_USED),
        Setting("trace_step", INTEGER, None, "The global step --trace_file traces (default: "
                "the first after warmup).", scaling=NOT_USED),
        Setting("use_chrome_trace_format", BOOLEAN, True, "--trace_file in Chrome trace "
                "format (JSON); off: the profiler's raw XSpace proto, in text format.",
                scaling=NOT_USED),
        Setting("graph_file", STRING, None, "Write the training step's graph (a GraphDef "
                "with shapes) to this file before the first step: text if the name ends in "
                "'txt', else binary.", training_only=True, scaling=NOT_USED),
        Setting("benchmark_log_dir", STRING, None, "Write machine-readable results here: "
                "benchmark_run.log (the run, one JSON object) and metric.log (one JSON "
                "object per line: images/sec per display step, the average, accuracy).",
                training_only=True, scaling=NOT_USED),
        Setting("profile_steps", STRING, None, "'A,B': a TensorBoard profile of global steps "
                "A to B, under the summary directory.", scaling=NOT_USED)),
    *group("Checkpoints and evaluation",
        Setting("train_dir", STRING, None, "Directory for checkpoints; a run with the same "
                "train_dir resumes from its latest checkpoint.", scaling=NOT_USED),
        Setting("save_model_steps", INTEGER, None, "Save a checkpoint every this many steps.",
                training_only=True, scaling=NOT_USED),
        Setting("save_model_secs", FLOAT, None, "Save a checkpoint every this many seconds.",
                training_only=True, scaling=NOT_USED),
        Setting("max_ckpts_to_keep", INTEGER, 5, "Checkpoints kept in --train_dir.",
                training_only=True, scaling=NOT_USED),
        Setting("eval", BOOLEAN, False, "Evaluate top-1/top-5 accuracy of a checkpoint "
                "instead of training; --model and --data_name default to those the "
                "--train_dir was trained with.", scaling=NOT_USED),
        Setting("forward_only", BOOLEAN, False, "Inference benchmark: time the forward "
                "pass (inference mode) on --num_batches batches and print images/sec; trains "
                "nothing and writes nothing.", param=False, scaling=NOT_USED),
        Setting("checkpoint", STRING, None, "With --eval: the checkpoint to evaluate "
                "(default: the latest in --train_dir). Training: the checkpoint of "
                "--train_dir to resume from instead of its latest (an earlier one, when the "
                "latest is damaged).", scaling=NOT_USED),
        Setting("eval_batch_size", INTEGER, None, "Batch size per device for evaluation "
                "(default: the training batch per device).", scaling=NOT_USED),
        Setting("eval_during_training_every_n_steps", INTEGER, None, "Evaluate every this "
                "many training steps, and at the end.", training_only=True, scaling=NOT_USED),
        Setting("eval_during_training_every_n_epochs", FLOAT, None, "Evaluate after every "
                "this many epochs, and at the end.", training_only=True, scaling=NOT_USED),
        Setting("eval_during_training_at_specified_steps", STRING, None, "'S1,S2,...': "
                "evaluate after these global steps, and at the end.", training_only=True,
                scaling=NOT_USED),
        Setting("eval_during_training_at_specified_epochs", STRING, None, "'E1,E2,...': "
                "evaluate after these epochs (fractions allowed), and at the end.",
                training_only=True, scaling=NOT_USED),
        Setting("stop_at_top_1_accuracy", FLOAT, None, "Stop training once an eval during "
                "training reaches this top-1 (the last checkpoint is then final).",
                training_only=True, scaling=NOT_USED),
        Setting("num_eval_batches", INTEGER, None, "Evaluate this many full batches, "
                "repeating the eval split as needed (default: the split once).",
                scaling=NOT_USED),
        Setting("num_eval_epochs", FLOAT, None, "Evaluate ceil(this x split size / batch) "
                "full batches, repeating the split as needed (default: 1 pass).",
                scaling=NOT_USED),
        Setting("eval_interval_secs", FLOAT, 0.0, "With --eval: follow --train_dir, "
                "checking for new checkpoints every this many seconds; each is evaluated "
                "once, in step order, until the run's final one (0: evaluate once).",
                scaling=NOT_USED),
        Setting("eval_dir", STRING, None, "With --eval: write the results as TensorBoard "
                "events (accuracy/top1, accuracy/top5 at each checkpoint's step) here.",
                scaling=NOT_USED)),
    *group("Cluster",
        Setting("worker_hosts", STRING, None, "Multi-worker: comma-separated host:port of "
                "every worker, the chief first; needs --variable_update=collective_all_reduce "
                "(default: TF_CONFIG, else one process)."),
        Setting("task_index", INTEGER, 0, "Multi-worker: this worker's index in "
                "--worker_hosts; 0 is the chief (checkpoints, output)."),
        Setting("collective_timeout_secs", FLOAT, None, "Multi-worker: a worker that has not "
                "joined within this many seconds, or that stops answering health checks for "
                "about as long (dead or unreachable), stops the run (default: 60)."),
        Setting("collective_implementation", ENUM, "auto", "Multi-worker: how the "
                "collectives that cross workers run, in TensorFlow's CommunicationImplementation "
                "terms: nccl (NCCL between the workers' GPUs), ring (TensorFlow's ring over "
                "gRPC, through host memory) or auto (nccl where the crossing member is a GPU, "
                "ring on CPU devices and for the per-step scalars on /cpu:0).",
                choices=COLLECTIVE_IMPLEMENTATIONS,
                applies_with=("variable_update", ("collective_all_reduce",))),
        Setting("cluster_source", ENUM, "auto", "Multi-worker: where the cluster comes "
                "from: flags (--worker_hosts/--task_index), tf_config (TF_CONFIG, as "
                "Kubernetes operators write it), slurm (the environment srun sets), or auto "
                "(the one present; more than one is an error).", choices=CLUSTER_SOURCES),
        Setting("slurm_port_base", INTEGER, 8888, "Multi-worker under Slurm: the first "
                "port of a node's tasks (task k on a node listens on this + k).")),
    *group("Runtime and threads",
        Setting("num_intra_threads", INTEGER, None, "Threads of TensorFlow's intra-op pool; "
                "0: TensorFlow picks (default: 1 on GPUs; on CPUs running more than one "
                "tower at a time, the cores divided among this process's towers and the "
                "cluster's workers on this host, at least 1 (measured on 2 cores: 1.15-1.29x "
                "at 2-8 towers); one tower: TensorFlow's choice)."),
        Setting("num_inter_threads", INTEGER, 0, "Threads of TensorFlow's inter-op pool; "
                "0: TensorFlow picks."),
        Setting("mkl", BOOLEAN, False, "Set the MKL/OpenMP environment before TensorFlow "
                "loads: KMP_BLOCKTIME, KMP_SETTINGS, KMP_AFFINITY, and OMP_NUM_THREADS from "
                "--num_intra_threads. Only OpenMP builds of TensorFlow (Intel's) read them.",
                scaling=NOT_USED),
        Setting("kmp_blocktime", INTEGER, 0, "With --mkl: KMP_BLOCKTIME, milliseconds a "
                "thread waits after a parallel region before sleeping.", scaling=NOT_USED),
        Setting("kmp_affinity", STRING, "granularity=fine,verbose,compact,1,0", "With --mkl: "
                "KMP_AFFINITY, which cores OpenMP threads are bound to.", scaling=NOT_USED),
        Setting("kmp_settings", INTEGER, 1, "With --mkl: KMP_SETTINGS; 1 prints the OpenMP "
                "settings when it loads.", scaling=NOT_USED),
        Setting("allow_growth", BOOLEAN, None, "GPU memory growth "
                "(tf.config.experimental.set_memory_growth on every GPU): allocate as needed "
                "instead of all at start (default: TensorFlow's, all at start); GPUs only."),
        Setting("sync_on_finish", BOOLEAN, False, "Wait for every device to finish its work "
                "at the end of each step (inside the step's time).", training_only=True),
        Setting("step_timeout_secs", FLOAT, None, "A training step that runs longer than "
                "this many seconds (a hung collective, peer or kernel) ends the process with "
                "exit status 1 and one line naming the step and its phase, so a launcher "
                "restarts from the last checkpoint; watched from the second step of a process "
                "on (the first traces); 0: no watch (default: 10x the slowest step after "
                "warm-up, at least 300).", training_only=True, scaling=NOT_USED)),
    *group("Input pipeline (--data_dir with --input=dataset)",
        Setting("datasets_use_prefetch", BOOLEAN, True, "Prefetch global batches at the end "
                "of the tf.data pipeline.", training_only=True, scaling=NOT_USED),
        Setting("datasets_prefetch_buffer_size", INTEGER, None, "Batches that prefetch holds "
                "(default: tf.data's AUTOTUNE; tf_cnn_benchmarks used 1).",
                training_only=True, scaling=NOT_USED),
        Setting("datasets_num_private_threads", INTEGER, None, "Threads of a private pool "
                "for the pipeline (tf.data Options.threading.private_threadpool_size); 0 or "
                "unset: TensorFlow's shared pool.", training_only=True, scaling=NOT_USED),
        Setting("datasets_use_caching", BOOLEAN, False, "Cache the records (still encoded) "
                "in memory after the first epoch reads them.", training_only=True,
                scaling=NOT_USED),
        Setting("datasets_parallel_interleave_cycle_length", INTEGER, None, "imagenet: "
                "TFRecord shards read at once (default: 8, or fewer shards).",
                training_only=True, scaling=NOT_USED),
        Setting("datasets_sloppy_parallel_interleave", BOOLEAN, False, "imagenet: take "
                "records from whichever shard is ready (faster with stragglers; the order, "
                "and so an exact resume, is lost).", training_only=True, scaling=NOT_USED),
        Setting("datasets_parallel_interleave_prefetch", INTEGER, None, "imagenet: shards "
                "opened ahead of the interleave (default: tf.data's AUTOTUNE).",
                training_only=True, scaling=NOT_USED),
        Setting("datasets_repeat_cached_sample", BOOLEAN, False, "Read one record, keep it "
                "in memory and repeat it for every example: measures the pipeline without "
                "file reads.", training_only=True, scaling=NOT_USED),
        Setting("batch_group_size", INTEGER, 1, "With staging (--staging_depth >= 1): put "
                "this many batches on each device at a time, every this many steps, instead "
                "of one per step (then it replaces --staging_depth).",
                training_only=True, scaling=NOT_USED)),
    *group("Output",
        Setting("verbose", BOOLEAN, False, "Show TensorFlow's own log output (C++ notices "
                "such as oneDNN's, INFO logging from TensorFlow and Keras), hidden by "
                "default. TF_CPP_MIN_LOG_LEVEL=0 shows the C++ part only, --verbosity=0 the "
                "Python part only.", param=False)),
)


# Each generator reads `table`, SETTINGS unless given (a test's scratch table).

def params_settings(table=None):
    """The settings that are fields of Params (all but command-line-only ones)."""
    return tuple(s for s in _table(table) if s.param)


# The settings that name a file or directory: `~` in them is the user's home
# (Params expands it), also where no shell did (a config file, `--flag=~/x`).
PATH_SETTINGS = ("data_dir", "summary_dir", "trace_file", "graph_file", "benchmark_log_dir",
                 "train_dir", "checkpoint", "eval_dir")


def expand_path(value):
    """`value` with a leading `~` expanded (other values as they are)."""
    import os
    return os.path.expanduser(value) if isinstance(value, str) and value.startswith("~") \
        else value


def groups(table=None):
    """(title, names) of each --help group, in order."""
    table = _table(table)
    titles = list(dict.fromkeys(s.group for s in table))
    return tuple((title, tuple(s.name for s in table if s.group == title)) for title in titles)


def training_only(table=None):
    """The names --eval refuses."""
    return tuple(s.name for s in _table(table) if s.training_only)


def mode_dependent(table=None):
    """The settings only some values of another setting read (`applies_with`)."""
    return tuple(s for s in _table(table) if s.applies_with is not None)


def for_scaling(treatment, table=None):
    """The names the scaling command treats as `treatment` (SHARED,
    PER_CONFIGURATION or NOT_USED)."""
    return tuple(s.name for s in _table(table) if s.scaling == treatment)


def declare_fields(table=None):
    """A class decorator, applied before dataclasses.dataclass: gives the class
    one annotated field per Params setting, with its default."""
    def declare(cls):
        annotations = dict(cls.__dict__.get("__annotations__", {}))
        for setting in params_settings(table):
            if setting.name in cls.__dict__ or setting.name in annotations:
                raise TypeError(f"{cls.__name__}.{setting.name} is already defined; "
                                "settings come from towertrain.config.settings")
            annotations[setting.name] = setting.python_type
            setattr(cls, setting.name, setting.default)
        cls.__annotations__ = annotations
        return cls
    return declare


def _table(table):
    # Read at call time, so a table patched before the importers load is used.
    return SETTINGS if table is None else table
