"""Export a checkpoint as a stock Keras model (.keras) and/or a SavedModel.

    python -m towertrain.export --train_dir=D --output=model.keras [--data_format=NHWC]
                                [--saved_model=DIR] [--checkpoint=PATH] [--model=NAME]

The model is rebuilt from the registry (name and classes recorded in the
train_dir), in the requested data format, and the checkpoint's variables are
read into it by path. towertrain-specific layers are swapped for their stock
Keras equivalents with the same weights, so the file loads with
keras.saving.load_model in a process that never imports towertrain.
"""
import os
import sys

_ERROR_PREFIX = "towertrain.export: error: "


def _stock_layer(layer):
    """The stock Keras layer standing in for a towertrain layer, or None."""
    import keras
    from towertrain.models import FusedBatchNormalization, LocalResponseNormalization
    if isinstance(layer, FusedBatchNormalization):
        # Same variables, same inference math (moving statistics).
        return keras.layers.BatchNormalization(
            axis=layer.axis, momentum=layer.momentum, epsilon=layer.epsilon,
            center=getattr(layer, "center", True), scale=getattr(layer, "scale", True),
            name=layer.name)
    if isinstance(layer, LocalResponseNormalization):
        return _stock_lrn(layer)
    return None


def _stock_lrn(layer):
    """LRN as a nested functional model of keras.ops (no variables).

    Keras has no LRN layer and a Lambda needs safe_mode=False to load, but ops
    called on symbolic tensors serialize as stock Keras operations. Same math
    as tf.nn.local_response_normalization: x / (bias + alpha * window_sum(x^2))^beta,
    the window spanning depth_radius channels each side, zero outside.
    """
    import keras
    from keras import ops
    shape = tuple(layer.input.shape[1:])
    axis = 1 if layer.data_format == "channels_first" else 3
    channels, radius = shape[axis - 1], layer.depth_radius
    inputs = keras.Input(shape)
    padding = [[0, 0]] * 4
    padding[axis] = [radius, radius]
    squared = ops.pad(ops.square(inputs), padding)
    window_sum = None
    for offset in range(2 * radius + 1):  # shifted slices summed: as exact as TF, no cumsum
        index = [slice(None)] * 4
        index[axis] = slice(offset, offset + channels)
        term = squared[tuple(index)]
        window_sum = term if window_sum is None else window_sum + term
    outputs = inputs / ops.power(layer.bias + layer.alpha * window_sum, layer.beta)
    return keras.Model(inputs, outputs, name=layer.name)


def _non_stock(model):
    """Names of layers/operations under `model` whose class is not Keras' own."""
    import keras
    found = []
    for op in getattr(model, "operations", model.layers):
        if not type(op).__module__.startswith("keras."):
            found.append(f"{op.name} ({type(op).__module__}.{type(op).__name__})")
        elif isinstance(op, keras.Model):
            found.extend(_non_stock(op))
    return found


def to_stock_keras(model):
    """A clone of `model` using stock Keras layers only, with the same weights."""
    import keras

    def clone(layer):
        stock = _stock_layer(layer)
        return stock if stock is not None else layer.__class__.from_config(layer.get_config())

    cloned = keras.models.clone_model(model, clone_function=clone)
    leftovers = _non_stock(cloned)
    if leftovers:
        # Caught here, not when someone loads the file without towertrain.
        raise ValueError(f"no stock Keras equivalent for {', '.join(leftovers)}: the "
                         ".keras file would not load without towertrain")
    for layer in model.layers:
        if not layer.weights:
            continue
        target = cloned.get_layer(layer.name)
        source = {w.name: w for w in layer.weights}
        if sorted(source) != sorted(w.name for w in target.weights):
            raise ValueError(f"layer {layer.name}: cannot map weights {sorted(source)} onto "
                             f"{sorted(w.name for w in target.weights)}")
        for weight in target.weights:
            weight.assign(source[weight.name].value)
    return cloned


def load_model_from_checkpoint(path, model_name, num_classes, data_format, image_size=None):
    """Builds the registered model in `data_format` and reads the checkpoint into it."""
    import tensorflow as tf
    from towertrain import checkpoint as ckpt_lib, models
    with tf.device("/cpu:0"):
        model = models.build(model_name, num_classes=num_classes, data_format=data_format,
                             image_size=image_size)
    variables = ckpt_lib.model_variable_dict(model)
    ckpt_lib.restore(tf.train.Checkpoint(model=variables), path, variables)
    return model


def export(train_dir=None, output=None, saved_model=None, data_format=None,
           checkpoint=None, model_name=None):
    """Writes `output` (.keras) and/or `saved_model` (directory); returns the stock model."""
    from towertrain import checkpoint as ckpt_lib
    if not output and not saved_model:
        raise ckpt_lib.CheckpointError("nothing to write: give --output and/or --saved_model")
    if output and not output.endswith(".keras"):
        raise ckpt_lib.CheckpointError(f"--output={output}: must end in .keras")
    path = ckpt_lib.resolve(train_dir, checkpoint)
    run_dir = train_dir or os.path.dirname(path)
    info = ckpt_lib.read_run_info(run_dir)
    if model_name and info.get("model") and model_name != info["model"]:
        # Said up front: the variable check would list every variable of both models.
        raise ckpt_lib.CheckpointError(
            f"--model={model_name} but the checkpoint in {run_dir} was trained with "
            f"--model={info['model']}; drop --model or use another --train_dir")
    model_name = model_name or info.get("model")
    if not model_name:
        raise ckpt_lib.CheckpointError(
            f"no {ckpt_lib.RUN_INFO_FILE} next to the checkpoint; pass --model")
    input_shape = info.get("input_shape")
    image_size = input_shape[1] if input_shape else None  # square images: H == W either way
    model = load_model_from_checkpoint(path, model_name, info.get("num_classes"),
                                       data_format or info.get("data_format", "NHWC"),
                                       image_size)
    stock = to_stock_keras(model)
    if output:
        stock.save(output)
    if saved_model:
        # A 'serve' endpoint and a 'serving_default' signature taking images.
        stock.export(saved_model, format="tf_saved_model", verbose=False)
    return stock


def main(argv):
    from absl import flags
    FLAGS = flags.FLAGS
    if len(argv) > 1:  # before importing TensorFlow: a typo should fail at once
        print(f"{_ERROR_PREFIX}unexpected arguments {argv[1:]}", file=sys.stderr)
        return 2
    from towertrain.cli import import_tensorflow_quietly
    import_tensorflow_quietly()  # TensorFlow's oneDNN banner would precede our output
    from towertrain import checkpoint as ckpt_lib
    from absl import logging
    logging.set_verbosity(logging.WARNING)  # SavedModel writing logs a page of INFO
    try:
        export(FLAGS.train_dir, FLAGS.output, FLAGS.saved_model, FLAGS.data_format,
               FLAGS.checkpoint, FLAGS.model)
    except (ckpt_lib.CheckpointError, ValueError) as err:
        print(f"{_ERROR_PREFIX}{err}", file=sys.stderr)
        return 2
    for target in (FLAGS.output, FLAGS.saved_model):
        if target:
            print(f"Exported {target}")
    return 0


_FLAG_NAMES = ("train_dir", "checkpoint", "output", "saved_model", "data_format", "model")


def _define_flags():
    from absl import flags
    flags.DEFINE_string("train_dir", None, "Training directory (latest checkpoint).")
    flags.DEFINE_string("checkpoint", None, "A checkpoint path instead of the latest.")
    flags.DEFINE_string("output", None, "The .keras file to write.")
    flags.DEFINE_string("saved_model", None, "A directory to write a SavedModel into.")
    flags.DEFINE_enum("data_format", None, ["NCHW", "NHWC"],
                      "Image layout of the exported model (default: the training one).")
    flags.DEFINE_string("model", None, "Model name (default: recorded in --train_dir); "
                        "must match the one the checkpoint was trained with.")


def _usage():
    from absl import flags
    import textwrap
    lines = [__doc__.split("\n")[0], "", "usage:",
             textwrap.indent(textwrap.dedent(__doc__.split("\n\n")[1]).rstrip(), "  "),
             "", "flags:"]
    for name in _FLAG_NAMES:
        flag = flags.FLAGS[name]
        lines.append(f"  --{name}: {flag.help}")
    return "\n".join(lines)


def _parse_flags(argv):
    """absl's parser, with --help exiting 0 and bad flags one line and exit 2.

    absl would exit 1 after --help and print a FATAL log for an unknown flag.
    """
    from absl import flags
    if any(arg.split("=")[0] in ("-h", "-?", "--help", "-help", "--helpshort", "--helpfull")
           for arg in argv[1:]):
        print(_usage())
        sys.exit(0)
    try:
        return flags.FLAGS(argv)
    except flags.Error as err:
        print(f"{_ERROR_PREFIX}{err}", file=sys.stderr)
        sys.exit(2)


def run():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from absl import app
    _define_flags()
    app.run(lambda argv: sys.exit(main(argv)), flags_parser=_parse_flags)


if __name__ == "__main__":
    run()
