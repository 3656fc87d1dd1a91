"""Export a checkpoint as a stock Keras model (.keras) and/or a SavedModel.

    python -m towertrain.export --train_dir=D --output=model.keras [--data_format=NHWC]
                                [--saved_model=DIR] [--checkpoint=PATH] [--model=NAME]
                                [--include_preprocessing]

The model is rebuilt from the registry (name and classes recorded in the
train_dir), in the requested data format, and the checkpoint's variables are
read into it by path; the file loads with keras.saving.load_model in a process
that never imports towertrain. This is the command line of
towertrain.state.export, which does the work.
"""
import os
import sys
import textwrap

from absl import flags, logging

from towertrain.commands import common
from towertrain.errors import CheckpointError

COMMAND = "towertrain.export"
# What the exported model expects, shown by --help (here, not beside the
# export, so --help imports no Keras).
INPUT_CONTRACT = (
    "The exported model takes images preprocessed as for --eval: for cifar10 each "
    "image standardized (tf.image.per_image_standardization), for imagenet the "
    "central 87.5% crop resized to the model's size and scaled to [-1, 1]; fed raw "
    "pixels it scores far lower. --include_preprocessing puts the cifar10 eval "
    "preprocessing inside the model, which then takes raw pixels (0..255, NHWC).")


def main(argv):
    FLAGS = flags.FLAGS
    if len(argv) > 1:  # before importing TensorFlow: a typo should fail at once
        return common.fail(f"unexpected arguments {argv[1:]}", COMMAND)
    common.import_tensorflow_quietly()  # TensorFlow's oneDNN banner would precede our output
    # After TensorFlow's quiet import: the export builds Keras models.
    from towertrain.state.export import export
    logging.set_verbosity(logging.WARNING)  # SavedModel writing logs a page of INFO
    try:
        export(FLAGS.train_dir, FLAGS.output, FLAGS.saved_model, FLAGS.data_format,
               FLAGS.checkpoint, FLAGS.model, FLAGS.include_preprocessing)
    except (CheckpointError, ValueError) as err:
        return common.fail(str(err), COMMAND)
    for target in (FLAGS.output, FLAGS.saved_model):
        if target:
            print(f"Exported {target}")
    return 0


FLAG_NAMES = ("train_dir", "checkpoint", "output", "saved_model", "data_format", "model",
              "include_preprocessing")


def define_flags():
    flags.DEFINE_string("train_dir", None, "Training directory (latest checkpoint).")
    flags.DEFINE_string("checkpoint", None, "A checkpoint path instead of the latest.")
    flags.DEFINE_string("output", None, "The .keras file to write.")
    flags.DEFINE_string("saved_model", None, "A directory to write a SavedModel into.")
    flags.DEFINE_enum("data_format", None, ["NCHW", "NHWC"],
                      "Image layout of the exported model (default: the training one).")
    flags.DEFINE_string("model", None, "Model name (default: recorded in --train_dir); "
                        "must match the one the checkpoint was trained with.")
    flags.DEFINE_boolean("include_preprocessing", False, "Put the eval preprocessing "
                         "inside the exported model, which then takes raw pixels (0..255, "
                         "NHWC); cifar10 runs only.")


def usage():
    lines = [__doc__.split("\n")[0], "", "usage:",
             textwrap.indent(textwrap.dedent(__doc__.split("\n\n")[1]).rstrip(), "  "),
             "", "flags:"]
    for name in FLAG_NAMES:
        flag = flags.FLAGS[name]
        lines.append(f"  --{name}: {flag.help}")
    lines += ["", "input contract:"] + textwrap.wrap(INPUT_CONTRACT, 78, initial_indent="  ",
                                                     subsequent_indent="  ")
    return "\n".join(lines)


def run():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    define_flags()
    common.run_app(lambda argv: sys.exit(main(argv)),
                   common.flags_parser(lambda: usage() + "\n", COMMAND, friendly_errors=False),
                   COMMAND)


if __name__ == "__main__":
    run()
