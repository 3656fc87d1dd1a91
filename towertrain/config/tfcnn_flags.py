"""Every flag of tf_cnn_benchmarks, as data, and what towertrain does with it.

Read from tensorflow/benchmarks at commit SOURCE_COMMIT: the 137
`flags.DEFINE_*` calls of scripts/tf_cnn_benchmarks/benchmark_cnn.py plus
--ml_perf_compliance_logging of scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py
(138 names; flags.py there only wraps absl's DEFINE_* and defines none). Each
flag is decided from what it does in that source:

  IMPLEMENTED (1): a towertrain flag with the same meaning (`note`: what differs).
  ACCEPTED_VALUE (2): accepted when its value is `accepted`, what towertrain
    always does on TF 2; any other value is refused with `why`.
  REFUSED (3): refused whatever its value, with `why` (why it cannot apply,
    and what to use instead).

Category 1 is each declared setting's `tfcnn` (towertrain.config.declare: its
type, default and what differs there), collected here; categories 2 and 3
are the table below. towertrain.config.tfcnn_definitions defines the absl
flags of categories 2 and 3, towertrain.config.tfcnn_checks refuses them, and
towertrain.commands.migration_doc writes docs/migration.md's table from FLAGS.
"""
import collections

from towertrain.config import settings

SOURCE_REPO = "tensorflow/benchmarks"
SOURCE_COMMIT = "8fb79079265933ad39bea628b777af662f5bf15d"
SOURCE_FILES = ("scripts/tf_cnn_benchmarks/benchmark_cnn.py",
                "scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py")

IMPLEMENTED, ACCEPTED_VALUE, REFUSED = 1, 2, 3

TfCnnFlag = collections.namedtuple("TfCnnFlag", "name type default category accepted why note")


def _flag(name, type_, default, category, accepted=None, why="", note=""):
    return TfCnnFlag(name, type_, default, category, accepted, why, note)


def same(name, type_, default, note=""):
    return _flag(name, type_, default, IMPLEMENTED, note=note)


def value(name, type_, default, accepted, why):
    return _flag(name, type_, default, ACCEPTED_VALUE, accepted=accepted, why=why)


def refused(name, type_, default, why):
    return _flag(name, type_, default, REFUSED, why=why)


_SESSION_GPU = ("a TF 1 Session GPUOptions field; TF 2's tf.config has no equivalent, "
                "so towertrain leaves TensorFlow's default")
_CLUSTER = ("towertrain has no parameter-server or controller jobs: every process is a "
            "worker; use --variable_update=collective_all_reduce with --worker_hosts and "
            "--task_index")
_EXCHANGE = ("tf_cnn_benchmarks' TF 1 all-reduce tuning knobs are not ported; use "
             "--gradient_repacking=N (packs in reverse layer order, each reduced as soon as "
             "it is ready) and --all_reduce_spec=local/cross for a hierarchical exchange")
_TRT = ("TensorRT conversion needs a frozen TF 1 graph and a TensorRT build; export with "
        "python -m towertrain.export and convert the SavedModel with "
        "tf.experimental.tensorrt.Converter")

# Categories 2 and 3: the flags towertrain accepts with one value or refuses.
_TABLE = (
    value("freeze_when_forward_only", "boolean", False, False,
          "freezing converts a TF 1 Session graph's variables to constants (for TensorRT); "
          "TF 2 runs --forward_only as a tf.function over the variables"),
    value("collect_eval_results_async", "boolean", False, False,
          "it post-processes SSD (ssd300) eval results in another process; towertrain has "
          "no SSD model"),
    refused("autotune_threshold", "integer", None,
            "it only set TF_AUTOTUNE_THRESHOLD and lengthened the warm-up; set "
            "TF_AUTOTUNE_THRESHOLD in the environment and raise --num_warmup_batches"),
    value("use_datasets", "boolean", True, True,
          "without datasets tf_cnn_benchmarks read through TF 1 RecordInput ops; towertrain "
          "reads --data_dir with tf.data, or with --input=queue through a queue fed by threads"),
    value("input_preprocessor", "string", "default", "default",
          "towertrain's preprocessing follows --data_name (and --distortions); "
          "tf_cnn_benchmarks' other preprocessors (official_models_imagenet, ...) are not "
          "ported"),
    refused("gpu_thread_mode", "string", "gpu_private",
            "it only set TF_GPU_THREAD_MODE; set TF_GPU_THREAD_MODE (global, gpu_private, "
            "gpu_shared) in the environment"),
    refused("per_gpu_thread_count", "integer", 0,
            "it only set TF_GPU_THREAD_COUNT; set TF_GPU_THREAD_COUNT in the environment"),
    refused("hierarchical_copy", "boolean", False, _EXCHANGE),
    refused("network_topology", "enum", "dgx1", _EXCHANGE),
    refused("use_numa_affinity", "boolean", False,
            "it pinned TF 1 session threads to NUMA nodes; start towertrain under "
            "numactl --cpunodebind=N --membind=N instead"),
    refused("tfprof_file", "string", None,
            "tfprof profiles a TF 1 Session's RunMetadata; use --profile_steps=A,B (a "
            "TensorBoard profile) or --trace_file"),
    refused("partitioned_graph_file_prefix", "string", None,
            "partitioned graphs come from a TF 1 Session; set TF_DUMP_GRAPH_PREFIX in the "
            "environment to dump TensorFlow's graphs"),
    refused("resnet_base_lr", "float", None,
            "the ImageNet ResNets' recipe keeps tf_cnn_benchmarks' default base of 0.128 "
            "per 256 examples; for another base pass the schedule as "
            "--piecewise_learning_rate_schedule with --num_learning_rate_warmup_epochs=5, "
            "or --init_learning_rate with --scale_learning_rate=linear --base_batch_size=256"),
    refused("gpu_memory_frac_for_testing", "float", 0,
            "TF 2 has no per-process GPU memory fraction; use --allow_growth, or "
            "tf.config.set_logical_device_configuration with a memory_limit in the library"),
    value("use_unified_memory", "boolean", None, False, _SESSION_GPU),
    value("timestamped_allocator", "boolean", False, False, _SESSION_GPU),
    value("gpu_kt_max_interval", "integer", 0, 0, _SESSION_GPU),
    value("gpu_kt_max_bytes", "integer", 0, 0, _SESSION_GPU),
    value("gpu_kt_max_pending", "integer", 0, 0, _SESSION_GPU),
    value("use_tf_layers", "boolean", True, True,
          "towertrain's models are always Keras layers (tf.layers' successor); the other "
          "path built raw TF 1 variables in variable scopes"),
    refused("debugger", "string", None,
            "tfdbg wrapped a TF 1 Session; use "
            "tf.debugging.experimental.enable_dump_debug_info and TensorBoard's Debugger V2"),
    value("use_python32_barrier", "boolean", False, False,
          "it chose the barrier of tf_cnn_benchmarks' TF 1 image-producer thread; towertrain "
          "has no such thread"),
    value("ml_perf", "boolean", False, False,
          "MLPerf v0.5's input and logging tweaks are not ported; towertrain scales images "
          "to [-1, 1]"),
    refused("multi_device_iterator_max_buffer_size", "integer", 1,
            "towertrain slices each batch on the CPU and stages it on the devices, with no "
            "MultiDeviceIterator; use --staging_depth"),
    value("winograd_nonfused", "boolean", True, True,
          "cuDNN's non-fused Winograd convolutions are on by default in TF 2; set "
          "TF_ENABLE_WINOGRAD_NONFUSED=0 in the environment to turn them off"),
    value("batchnorm_persistent", "boolean", True, False,
          "towertrain leaves cuDNN's batch-norm mode to TensorFlow; set "
          "TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1 in the environment for the persistent "
          "mode"),
    value("staged_vars", "boolean", False, False,
          "staging variables was a TF 1 parameter_server graph trick; towertrain stages the "
          "input (--staging_depth) and reads variables directly"),
    value("force_gpu_compatible", "boolean", False, False, _SESSION_GPU),
    value("fuse_decode_and_crop", "boolean", True, True,
          "towertrain always decodes only the crop window (tf.io.decode_and_crop_jpeg); the "
          "unfused path gives the same images, slower"),
    value("distort_color_in_yiq", "boolean", True, False,
          "the YIQ color distortion was a tf.contrib op, gone in TF 2"),
    value("enable_optimizations", "boolean", True, True,
          "Grappler is always on in TF 2 tf.functions; turn passes off with "
          "tf.config.optimizer.set_experimental_options in the library"),
    refused("rewriter_config", "string", None,
            "a text RewriterConfig proto for a TF 1 Session; in TF 2 set Grappler's passes "
            "with tf.config.optimizer.set_experimental_options"),
    value("use_resource_vars", "boolean", False, True,
          "TF 2 variables are always resource variables (reference variables are TF 1 only)"),
    value("compute_lr_on_cpu", "boolean", False, False,
          "towertrain's --xla_compile compiles only the towers' forward and backward, so the "
          "learning rate is never inside an XLA cluster"),
    value("sparse_to_dense_grads", "boolean", False, False,
          "only the NCF model had sparse gradients; towertrain's models have dense ones"),
    refused("agg_small_grads_max_bytes", "integer", 0, _EXCHANGE),
    refused("agg_small_grads_max_group", "integer", 10, _EXCHANGE),
    refused("allreduce_merge_scope", "integer", 1, _EXCHANGE),
    refused("job_name", "enum", "", _CLUSTER),
    refused("ps_hosts", "string", "", _CLUSTER),
    refused("controller_host", "string", None, _CLUSTER),
    value("server_protocol", "string", "grpc", "grpc",
          "towertrain's workers talk gRPC; the grpc+verbs and grpc+mpi protocols were TF 1 "
          "contrib"),
    value("cross_replica_sync", "boolean", True, True,
          "towertrain's updates are always synchronous (asynchronous training needed "
          "parameter-server tasks)"),
    refused("horovod_device", "string", "",
            "Horovod does not install on TF >= 2.16 and towertrain has no horovod mode; use "
            "--variable_update=collective_all_reduce across processes"),
    refused("backbone_model_path", "string", None,
            "a pretrained backbone for the SSD model only, which towertrain does not have; "
            "to start from trained weights use Trainer.restore in the library"),
    value("trt_mode", "enum", "", "", _TRT),
    refused("trt_max_workspace_size_bytes", "integer", 4 << 30, _TRT),
    refused("benchmark_test_id", "string", None,
            "a label for tf_cnn_benchmarks' benchmark logger only; name the "
            "--benchmark_log_dir after the test instead"),
    value("ml_perf_compliance_logging", "boolean", False, False,
          "MLPerf compliance logs need the MLPerf v0.5 training repository; towertrain "
          "prints none"),
)


def _implemented():
    """Category 1 from the declared settings: a setting with `tfcnn` is a
    tf_cnn_benchmarks flag of its name that towertrain implements."""
    return tuple(same(s.name, s.tfcnn.type, s.tfcnn.default, s.tfcnn.note)
                 for s in settings.SETTINGS if s.tfcnn is not None)


# By name, as docs/migration.md lists them.
FLAGS = tuple(sorted(_implemented() + _TABLE, key=lambda f: f.name))
BY_NAME = {f.name: f for f in FLAGS}
# Flags towertrain defines only to refuse (category 3) or to accept with one value (2).
REFUSED_NAMES = frozenset(f.name for f in FLAGS if f.category != IMPLEMENTED)

# Implemented flags whose tf_cnn_benchmarks default (0, '' or []) means "unset"
# there, as towertrain's unset default (None) does here: --batch_size=0 is the
# model's batch, --save_model_secs=0 no timed saves, --gpu_indices= the first
# GPUs. Spelled out on a command line, each is taken as not given.
UNSET_DEFAULTS = tuple(s.name for s in settings.SETTINGS
                       if s.tfcnn is not None and s.tfcnn.unset)


def unset_spelling(flag):
    """How tf_cnn_benchmarks' default of `flag` reads on towertrain's command
    line: a list's [] is the '' its string flag parses."""
    return "" if flag.default == [] else flag.default

# tf_cnn_benchmarks' choices for its enum flags that towertrain implements (from
# the flags.DEFINE_enum calls at SOURCE_COMMIT). towertrain's flags take every one
# (--device and --local_parameter_device in either case, as there) except the
# values in REFUSED_VALUES, whose parse error says why and what to use.
ENUM_VALUES = {s.name: s.tfcnn.values for s in settings.SETTINGS
               if s.tfcnn is not None and s.tfcnn.values is not None}
REFUSED_VALUES = {(s.name, value): why for s in settings.SETTINGS if s.tfcnn is not None
                  for value, why in s.tfcnn.refused_values}


def value_refusal(name, given):
    """Why a tf_cnn_benchmarks value of an implemented enum flag is not taken
    (appended to the parse error), or None."""
    why = REFUSED_VALUES.get((name, given))
    return None if why is None else f"tf_cnn_benchmarks' {given}: {why}"


# Category-1 flags not yet defined (tests skip them naming this set). Empty:
# every category-1 flag is a towertrain flag.
PENDING = frozenset()


def category(n):
    """The flags of category n, in table order."""
    return tuple(f for f in FLAGS if f.category == n)


def spelled(flag, given):
    """How a user writes `flag` set to `given`: --name / --noname for booleans."""
    if flag.type == "boolean":
        return f"--{flag.name}" if given else f"--no{flag.name}"
    return f"--{flag.name}={given}"


def refusal(flag, given=None):
    """The error line (after 'towertrain: error: ') for `flag` given as `given`:
    category 3 whatever the value, category 2 for a value other than `accepted`."""
    if flag.category == REFUSED:
        return f"--{flag.name}: not supported: {flag.why}"
    if flag.category == ACCEPTED_VALUE:
        return (f"{spelled(flag, given)}: towertrain always runs as "
                f"{spelled(flag, flag.accepted)}: {flag.why}")
    raise ValueError(f"--{flag.name} is implemented (category 1); nothing refuses it")


def _check_table():
    # A malformed entry fails on import, naming itself.
    if len(BY_NAME) != len(FLAGS):
        raise ValueError("tfcnn_flags: a flag is listed twice")
    for f in FLAGS:
        if f.category not in (IMPLEMENTED, ACCEPTED_VALUE, REFUSED):
            raise ValueError(f"tfcnn_flags: --{f.name}: unknown category {f.category}")
        if (f.category == IMPLEMENTED) == bool(f.why):
            raise ValueError(f"tfcnn_flags: --{f.name}: categories 2 and 3 need a reason, "
                             "1 has none")
        if f.category == ACCEPTED_VALUE and f.accepted is None:
            raise ValueError(f"tfcnn_flags: --{f.name}: category 2 needs its accepted value")
    unknown = PENDING - {f.name for f in category(IMPLEMENTED)}
    if unknown:
        raise ValueError(f"tfcnn_flags: PENDING names non-category-1 flags {sorted(unknown)}")


_check_table()
