"""Inception v3 (Szegedy et al. 2015), layer for layer as keras.applications.InceptionV3.

Every conv is conv (no bias) -> batch norm without gamma (scale=False) ->
relu, which is what gives InceptionV3's 23,851,784 parameters at 299x299 and
1000 classes. The smallest input it takes is 75x75.
"""
import keras

from .layers import channel_axis, conv_bn_relu
from .registry import input_shape


class _Builder:
    """Holds the data format and numbers the conv blocks, so names are unique."""

    def __init__(self, data_format):
        self.data_format = data_format
        self.count = 0

    def conv(self, x, filters, kernel, strides=1, padding="same"):
        self.count += 1
        return conv_bn_relu(x, filters, kernel, self.data_format, f"conv{self.count}",
                            strides=strides, padding=padding, scale=False)

    def pool(self, x, kind, name, strides=1, padding="same"):
        layer = keras.layers.AveragePooling2D if kind == "avg" else keras.layers.MaxPooling2D
        return layer(3, strides=strides, padding=padding, data_format=self.data_format,
                     name=name)(x)

    def concat(self, branches, name):
        return keras.layers.Concatenate(axis=channel_axis(self.data_format), name=name)(branches)


def _block_35(b, x, pool_filters, name):
    branch1 = b.conv(x, 64, 1)
    branch5 = b.conv(b.conv(x, 48, 1), 64, 5)
    branch3 = b.conv(b.conv(b.conv(x, 64, 1), 96, 3), 96, 3)
    pool = b.conv(b.pool(x, "avg", f"{name}_pool"), pool_filters, 1)
    return b.concat([branch1, branch5, branch3, pool], name)


def _reduce_35_to_17(b, x, name):
    branch3 = b.conv(x, 384, 3, strides=2, padding="valid")
    branch3dbl = b.conv(b.conv(b.conv(x, 64, 1), 96, 3), 96, 3, strides=2, padding="valid")
    pool = b.pool(x, "max", f"{name}_pool", strides=2, padding="valid")
    return b.concat([branch3, branch3dbl, pool], name)


def _block_17(b, x, width, name):
    branch1 = b.conv(x, 192, 1)
    branch7 = b.conv(b.conv(b.conv(x, width, 1), width, (1, 7)), 192, (7, 1))
    branch7dbl = b.conv(x, width, 1)
    for kernel in ((7, 1), (1, 7), (7, 1)):
        branch7dbl = b.conv(branch7dbl, width, kernel)
    branch7dbl = b.conv(branch7dbl, 192, (1, 7))
    pool = b.conv(b.pool(x, "avg", f"{name}_pool"), 192, 1)
    return b.concat([branch1, branch7, branch7dbl, pool], name)


def _reduce_17_to_8(b, x, name):
    branch3 = b.conv(b.conv(x, 192, 1), 320, 3, strides=2, padding="valid")
    branch7x3 = b.conv(b.conv(b.conv(x, 192, 1), 192, (1, 7)), 192, (7, 1))
    branch7x3 = b.conv(branch7x3, 192, 3, strides=2, padding="valid")
    pool = b.pool(x, "max", f"{name}_pool", strides=2, padding="valid")
    return b.concat([branch3, branch7x3, pool], name)


def _block_8(b, x, name):
    branch1 = b.conv(x, 320, 1)
    branch3 = b.conv(x, 384, 1)
    branch3 = b.concat([b.conv(branch3, 384, (1, 3)), b.conv(branch3, 384, (3, 1))],
                       f"{name}_3x3")
    branch3dbl = b.conv(b.conv(x, 448, 1), 384, 3)
    branch3dbl = b.concat([b.conv(branch3dbl, 384, (1, 3)), b.conv(branch3dbl, 384, (3, 1))],
                          f"{name}_3x3dbl")
    pool = b.conv(b.pool(x, "avg", f"{name}_pool"), 192, 1)
    return b.concat([branch1, branch3, branch3dbl, pool], name)


def build_inception3(num_classes, data_format, image_size):
    if image_size < 75:
        raise ValueError(f"inception3 needs images of at least 75x75, got {image_size}")
    b = _Builder(data_format)
    inputs = keras.Input(input_shape(image_size, data_format))
    x = b.conv(inputs, 32, 3, strides=2, padding="valid")
    x = b.conv(x, 32, 3, padding="valid")
    x = b.conv(x, 64, 3)
    x = b.pool(x, "max", "stem_pool1", strides=2, padding="valid")
    x = b.conv(x, 80, 1, padding="valid")
    x = b.conv(x, 192, 3, padding="valid")
    x = b.pool(x, "max", "stem_pool2", strides=2, padding="valid")
    for i, pool_filters in enumerate((32, 64, 64)):
        x = _block_35(b, x, pool_filters, f"mixed{i}")
    x = _reduce_35_to_17(b, x, "mixed3")
    for i, width in enumerate((128, 160, 160, 192)):
        x = _block_17(b, x, width, f"mixed{i + 4}")
    x = _reduce_17_to_8(b, x, "mixed8")
    x = _block_8(b, x, "mixed9")
    x = _block_8(b, x, "mixed10")
    x = keras.layers.GlobalAveragePooling2D(data_format=data_format, name="pool")(x)
    outputs = keras.layers.Dense(num_classes, name="logits")(x)
    return keras.Model(inputs, outputs, name="inception3")
