"""Export a checkpoint as a stock Keras model (.keras) and/or a SavedModel.

    python -m towertrain.export --train_dir=D --output=model.keras [--data_format=NHWC]
                                [--saved_model=DIR] [--checkpoint=PATH]

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
    from towertrain.models import FusedBatchNormalization
    if isinstance(layer, FusedBatchNormalization):
        # Same variables, same inference math (moving statistics).
        return keras.layers.BatchNormalization(
            axis=layer.axis, momentum=layer.momentum, epsilon=layer.epsilon,
            center=getattr(layer, "center", True), scale=getattr(layer, "scale", True),
            name=layer.name)
    return None


def to_stock_keras(model):
    """A clone of `model` using stock Keras layers only, with the same weights."""
    import keras

    def clone(layer):
        stock = _stock_layer(layer)
        return stock if stock is not None else layer.__class__.from_config(layer.get_config())

    cloned = keras.models.clone_model(model, clone_function=clone)
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
    info = ckpt_lib.read_run_info(train_dir or os.path.dirname(path))
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
    from towertrain import checkpoint as ckpt_lib
    from absl import flags
    FLAGS = flags.FLAGS
    if len(argv) > 1:
        print(f"{_ERROR_PREFIX}unexpected arguments {argv[1:]}", file=sys.stderr)
        return 2
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


def run():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from absl import app, flags
    flags.DEFINE_string("train_dir", None, "Training directory (latest checkpoint).")
    flags.DEFINE_string("checkpoint", None, "A checkpoint path instead of the latest.")
    flags.DEFINE_string("output", None, "The .keras file to write.")
    flags.DEFINE_string("saved_model", None, "A directory to write a SavedModel into.")
    flags.DEFINE_enum("data_format", None, ["NCHW", "NHWC"],
                      "Image layout of the exported model (default: the training one).")
    flags.DEFINE_string("model", None, "Model name (default: recorded in --train_dir).")
    app.run(lambda argv: sys.exit(main(argv)))


if __name__ == "__main__":
    run()
