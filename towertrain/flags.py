"""absl flags with tf_cnn_benchmarks' names and meanings, and Params from them."""
from absl import flags

from towertrain import params as params_lib

FLAGS = flags.FLAGS


def define_flags():
    """Defines the flags once per process (absl flags are global)."""
    if "variable_update" in FLAGS:
        return
    flags.DEFINE_string("model", "trivial", "Model name from the registry (towertrain.models).")
    flags.DEFINE_integer("batch_size", None, "Batch size per device (default: the model's).")
    flags.DEFINE_integer("num_batches", 100, "Number of timed training steps.")
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
                      "Where parameter_server keeps variables (default: --device).")
    flags.DEFINE_enum("all_reduce_spec", None, params_lib.ALL_REDUCE_SPECS,
                      "All-reduce for replicated (default: nccl on gpu, pscpu on cpu).")
    flags.DEFINE_enum("optimizer", "sgd", params_lib.OPTIMIZERS, "Optimizer.")
    flags.DEFINE_float("momentum", 0.9, "Momentum for momentum and rmsprop.")
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
                         "instead of training.")
    flags.DEFINE_string("checkpoint", None, "With --eval: the checkpoint to evaluate "
                        "(default: the latest in --train_dir).")
    flags.DEFINE_integer("eval_during_training_every_n_steps", None,
                         "Evaluate every this many training steps.")
    flags.DEFINE_string("data_dir", None, "Directory of the dataset's files (cifar10 binary "
                        "batches or imagenet TFRecords); unset: synthetic data.")
    flags.DEFINE_enum("input", "dataset", params_lib.INPUTS,
                      "dataset: tf.data pipeline; queue: a FIFOQueue filled by threads.")
    flags.DEFINE_integer("staging_depth", 1, "Batches staged on each device ahead of "
                         "compute (StagingArea double buffer); 0 turns staging off.")
    flags.DEFINE_integer("num_epochs", None, "Train this many passes over --data_dir "
                         "instead of --num_batches steps.")


def params_from_flags():
    """A Params from parsed flags; raises ParamsError naming the bad flag."""
    names = [field for field in params_lib.Params.__dataclass_fields__]
    return params_lib.Params(**{name: FLAGS[name].value for name in names})
