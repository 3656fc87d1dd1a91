"""GoogLeNet / Inception v1 (Szegedy et al. 2014), as tf_cnn_benchmarks' googlenet.

Convs with biases and relu, no batch norm. The final 7x7 average pool is a
global one, which is the same at 224x224 and lets small images through.
"""
import keras

from .layers import channel_axis, conv2d
from .registry import input_shape

# (1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool projection) per module.
_MODULES = {
    "3a": (64, 96, 128, 16, 32, 32), "3b": (128, 128, 192, 32, 96, 64),
    "4a": (192, 96, 208, 16, 48, 64), "4b": (160, 112, 224, 24, 64, 64),
    "4c": (128, 128, 256, 24, 64, 64), "4d": (112, 144, 288, 32, 64, 64),
    "4e": (256, 160, 320, 32, 128, 128),
    "5a": (256, 160, 320, 32, 128, 128), "5b": (384, 192, 384, 48, 128, 128),
}


def _conv(x, filters, kernel, data_format, name, strides=1):
    return conv2d(filters, kernel, data_format, name, strides=strides, activation="relu")(x)


def _max_pool(x, data_format, name, strides=2):
    return keras.layers.MaxPooling2D(3, strides=strides, padding="same",
                                     data_format=data_format, name=name)(x)


def _inception(x, widths, data_format, name):
    n1, n3r, n3, n5r, n5, npool = widths
    branch1 = _conv(x, n1, 1, data_format, f"{name}_1x1")
    branch3 = _conv(_conv(x, n3r, 1, data_format, f"{name}_3x3_reduce"),
                    n3, 3, data_format, f"{name}_3x3")
    branch5 = _conv(_conv(x, n5r, 1, data_format, f"{name}_5x5_reduce"),
                    n5, 5, data_format, f"{name}_5x5")
    pool = _conv(_max_pool(x, data_format, f"{name}_pool", strides=1),
                 npool, 1, data_format, f"{name}_pool_proj")
    return keras.layers.Concatenate(axis=channel_axis(data_format), name=name)(
        [branch1, branch3, branch5, pool])


def build_googlenet(num_classes, data_format, image_size):
    inputs = keras.Input(input_shape(image_size, data_format))
    x = _conv(inputs, 64, 7, data_format, "conv1", strides=2)
    x = _max_pool(x, data_format, "pool1")
    x = _conv(x, 64, 1, data_format, "conv2_reduce")
    x = _conv(x, 192, 3, data_format, "conv2")
    x = _max_pool(x, data_format, "pool2")
    for key in ("3a", "3b"):
        x = _inception(x, _MODULES[key], data_format, f"inception{key}")
    x = _max_pool(x, data_format, "pool3")
    for key in ("4a", "4b", "4c", "4d", "4e"):
        x = _inception(x, _MODULES[key], data_format, f"inception{key}")
    x = _max_pool(x, data_format, "pool4")
    for key in ("5a", "5b"):
        x = _inception(x, _MODULES[key], data_format, f"inception{key}")
    x = keras.layers.GlobalAveragePooling2D(data_format=data_format, name="pool5")(x)
    outputs = keras.layers.Dense(num_classes, name="logits")(x)
    return keras.Model(inputs, outputs, name="googlenet")
