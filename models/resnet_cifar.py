"""CIFAR ResNet v1 (He et al. 2015, section 4.2): depth = 6n + 2.

Three stages of n basic blocks with 16, 32, 64 filters; a stage change uses a
strided 1x1 projection shortcut (as in the Keras CIFAR-10 ResNet example).
"""
import keras

from .layers import batch_norm
from .registry import input_shape


def _conv(filters, kernel, strides, data_format, name):
    return keras.layers.Conv2D(filters, kernel, strides=strides, padding="same",
                               use_bias=False, kernel_initializer="he_normal",
                               data_format=data_format, name=name)


def _basic_block(x, filters, strides, data_format, name):
    shortcut = x
    y = _conv(filters, 3, strides, data_format, f"{name}_conv1")(x)
    y = batch_norm(data_format, name=f"{name}_bn1")(y)
    y = keras.layers.Activation("relu", name=f"{name}_relu1")(y)
    y = _conv(filters, 3, 1, data_format, f"{name}_conv2")(y)
    y = batch_norm(data_format, name=f"{name}_bn2")(y)
    if strides != 1 or shortcut.shape[1 if data_format == "channels_first" else -1] != filters:
        shortcut = _conv(filters, 1, strides, data_format, f"{name}_proj")(shortcut)
    y = keras.layers.Add(name=f"{name}_add")([y, shortcut])
    return keras.layers.Activation("relu", name=f"{name}_relu2")(y)


def resnet_cifar_v1(depth):
    if (depth - 2) % 6:
        raise ValueError(f"CIFAR ResNet depth must be 6n+2, got {depth}")
    blocks_per_stage = (depth - 2) // 6

    def build(num_classes, data_format, image_size):
        inputs = keras.Input(input_shape(image_size, data_format))
        x = _conv(16, 3, 1, data_format, "stem_conv")(inputs)
        x = batch_norm(data_format, name="stem_bn")(x)
        x = keras.layers.Activation("relu", name="stem_relu")(x)
        for stage, filters in enumerate((16, 32, 64)):
            for block in range(blocks_per_stage):
                strides = 2 if stage > 0 and block == 0 else 1
                x = _basic_block(x, filters, strides, data_format,
                                 f"stage{stage + 1}_block{block + 1}")
        x = keras.layers.GlobalAveragePooling2D(data_format=data_format, name="pool")(x)
        outputs = keras.layers.Dense(num_classes, name="logits")(x)
        return keras.Model(inputs, outputs, name=f"resnet{depth}")

    return build
