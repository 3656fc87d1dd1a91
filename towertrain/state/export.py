"""Export a checkpoint as a stock Keras model (.keras) and/or a SavedModel: the
library half of `python -m towertrain.export` (towertrain.commands.export).

The model is rebuilt from the registry (name and classes recorded in the
train_dir), in the requested data format, and the checkpoint's variables are
read into it by path. towertrain-specific layers are swapped for their stock
Keras equivalents with the same weights, so the file loads with
keras.saving.load_model in a process that never imports towertrain.
"""
import os

import keras
import tensorflow as tf
from keras import ops

from towertrain import models
from towertrain.errors import ParamsError
from towertrain.models import FusedBatchNormalization, LocalResponseNormalization, catalog
from towertrain.state import checkpoint as ckpt_lib
from towertrain.state import run_record, writable


def _stock_layer(layer):
    """The stock Keras layer standing in for a towertrain layer, or None."""
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
    found = []
    for op in getattr(model, "operations", model.layers):
        if not type(op).__module__.startswith("keras."):
            found.append(f"{op.name} ({type(op).__module__}.{type(op).__name__})")
        elif isinstance(op, keras.Model):
            found.extend(_non_stock(op))
    return found


def to_stock_keras(model):
    """A clone of `model` using stock Keras layers only, with the same weights."""

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


def save_stock_keras(model, path):
    """Saves `model` as a stock-Keras `.keras` file at `path`; returns the saved
    model. A model with layers of the user's own is saved as it is."""
    try:
        stock = to_stock_keras(model)
    except ValueError:  # the user's own layer classes: no stock stand-in needed
        stock = model
    _make_parent(path)
    stock.save(path)
    return stock


def _make_parent(path):
    """Creates the folder of the file `path` (Keras would fail on a missing one;
    writable.check proved it can be created)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)


def load_model_from_checkpoint(path, model_name, num_classes, data_format, image_size=None):
    """Builds the registered model in `data_format` and reads the checkpoint into it."""
    with tf.device("/cpu:0"):
        model = models.build(model_name, num_classes=num_classes, data_format=data_format,
                             image_size=image_size)
    variables = ckpt_lib.model_variable_dict(model)
    ckpt_lib.restore(tf.train.Checkpoint(model=variables), path, variables)
    return model


def with_eval_preprocessing(model, data_name, data_format):
    """`model` behind the eval preprocessing of `data_name`: a stock-Keras model
    taking raw pixels (0..255, NHWC). Only cifar10's is a fixed-size per-image
    computation; imagenet's starts from a JPEG of any size."""
    if data_name != "cifar10":
        raise ParamsError(f"--include_preprocessing: only for cifar10 runs (this one is "
                          f"{data_name}: its eval preprocessing decodes and crops a JPEG of "
                          "any size; apply towertrain.input_pipeline.preprocessing."
                          "imagenet_eval before the model instead)")
    shape = tuple(model.input_shape[1:])
    hwc = shape if data_format == "NHWC" else (shape[1], shape[2], shape[0])
    raw = keras.Input(hwc, name="raw_images")
    x = ops.cast(raw, "float32")
    # tf.image.per_image_standardization: (x - mean) / max(std, 1 / sqrt(pixels)).
    mean = ops.mean(x, axis=(1, 2, 3), keepdims=True)
    std = ops.std(x, axis=(1, 2, 3), keepdims=True)
    x = (x - mean) / ops.maximum(std, 1.0 / float(hwc[0] * hwc[1] * hwc[2]) ** 0.5)
    if data_format == "NCHW":
        x = ops.transpose(x, (0, 3, 1, 2))
    return keras.Model(raw, model(x), name=f"{model.name}_with_preprocessing")


def _check_registered(model_name, train_dir, checkpoint):
    """A model a script registered (towertrain.register_model) exists only in
    that script's process: `python -m towertrain.export` said 'unknown model'."""
    if model_name in catalog.registered_names():
        return
    where = f"--train_dir={train_dir}" if train_dir else f"--checkpoint={checkpoint}"
    raise ckpt_lib.CheckpointError(
        f"{where} was trained with --model={model_name}, which is not one of towertrain's "
        "models (a script registered it with towertrain.register_model, and this process "
        "has not); export it from that script: after its register_model call, run "
        "towertrain.commands.export.run() with these flags, or call "
        "towertrain.state.export.export(train_dir=..., output=...)")


def export(train_dir=None, output=None, saved_model=None, data_format=None,
           checkpoint=None, model_name=None, include_preprocessing=False):
    """Writes `output` (.keras) and/or `saved_model` (directory); returns the stock
    model. include_preprocessing: the model takes raw pixels (see
    towertrain.commands.export.INPUT_CONTRACT)."""
    if not output and not saved_model:
        raise ckpt_lib.CheckpointError("nothing to write: give --output and/or --saved_model")
    if output and not output.endswith(".keras"):
        raise ckpt_lib.CheckpointError(f"--output={output}: must end in .keras")
    writable.check([("output", output, True), ("saved_model", saved_model, False)])
    path = ckpt_lib.resolve(train_dir, checkpoint)
    run_dir = train_dir or os.path.dirname(path) or "."  # a bare ckpt-N: the current folder
    info = run_record.read(run_dir)
    run_record.check_rebuildable(
        info, f"--train_dir={train_dir}" if train_dir else f"--checkpoint={checkpoint}", "export")
    if model_name and info.get("model") and model_name != info["model"]:
        # Said up front: the variable check would list every variable of both models.
        raise ckpt_lib.CheckpointError(
            f"--model={model_name} but the checkpoint in {run_dir} was trained with "
            f"--model={info['model']}; drop --model or use another --train_dir")
    model_name = model_name or info.get("model")
    if not model_name:
        raise ckpt_lib.CheckpointError(
            f"no {run_record.RUN_INFO_FILE} next to the checkpoint; pass --model")
    _check_registered(model_name, train_dir, checkpoint)
    input_shape = info.get("input_shape")
    image_size = input_shape[1] if input_shape else None  # square images: H == W either way
    model = load_model_from_checkpoint(path, model_name, info.get("num_classes"),
                                       data_format or info.get("data_format", "NHWC"),
                                       image_size)
    stock = to_stock_keras(model)
    if include_preprocessing:
        stock = with_eval_preprocessing(stock, info.get("data_name") or "cifar10",
                                        data_format or info.get("data_format", "NHWC"))
    if output:
        _make_parent(output)
        stock.save(output)
    if saved_model:
        # A 'serve' endpoint and a 'serving_default' signature taking images.
        stock.export(saved_model, format="tf_saved_model", verbose=False)
    return stock
