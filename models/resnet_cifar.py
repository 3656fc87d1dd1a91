"""CIFAR ResNets (He et al. 2015 section 4.2; v2 pre-activation, He et al. 2016).

depth = 6n + 2: a 3x3 stem, three stages of n basic blocks with 16, 32, 64
filters, global average pooling, logits. A stage change uses a strided 1x1
projection shortcut (as in the Keras CIFAR-10 ResNet example; the registered
resnet20..110), or with shortcut="pad" the paper's parameter-free one (option
A, the network tf_cnn_benchmarks builds): the identity subsampled by the
stride and zero-padded to the new width (not registered: a library builder).
v1: conv-BN-relu-conv-BN, add, relu.  v2: BN-relu-conv-BN-relu-conv, add, with
the projection taken from the first pre-activation and a final BN-relu.
"""
import keras

from .layers import ChannelZeroPad, batch_norm, channel_axis
from .registry import input_shape


def _conv(filters, kernel, strides, data_format, name):
    return keras.layers.Conv2D(filters, kernel, strides=strides, padding="same",
                               use_bias=False, kernel_initializer="he_normal",
                               data_format=data_format, name=name)


SHORTCUTS = ("projection", "pad")


def _changes_size(x, filters, strides, data_format):
    return strides != 1 or x.shape[channel_axis(data_format)] != filters


def _widening_shortcut(x, filters, strides, data_format, name, kind):
    """The shortcut where a block changes size: a strided 1x1 conv
    ("projection"), or every stride-th pixel with zero channels added evenly
    on both sides ("pad")."""
    if kind == "projection":
        return _conv(filters, 1, strides, data_format, f"{name}_proj")(x)
    if strides != 1:
        x = keras.layers.AveragePooling2D(1, strides, data_format=data_format,
                                          name=f"{name}_subsample")(x)
    extra = filters - x.shape[channel_axis(data_format)]
    return ChannelZeroPad(data_format, extra // 2, extra - extra // 2, name=f"{name}_pad")(x)


def _basic_block_v1(x, filters, strides, data_format, name, kind):
    shortcut = x
    y = _conv(filters, 3, strides, data_format, f"{name}_conv1")(x)
    y = batch_norm(data_format, name=f"{name}_bn1")(y)
    y = keras.layers.Activation("relu", name=f"{name}_relu1")(y)
    y = _conv(filters, 3, 1, data_format, f"{name}_conv2")(y)
    y = batch_norm(data_format, name=f"{name}_bn2")(y)
    if _changes_size(x, filters, strides, data_format):
        shortcut = _widening_shortcut(x, filters, strides, data_format, name, kind)
    y = keras.layers.Add(name=f"{name}_add")([y, shortcut])
    return keras.layers.Activation("relu", name=f"{name}_relu2")(y)


def _basic_block_v2(x, filters, strides, data_format, name, kind):
    preact = batch_norm(data_format, name=f"{name}_bn1")(x)
    preact = keras.layers.Activation("relu", name=f"{name}_relu1")(preact)
    shortcut = x
    if _changes_size(x, filters, strides, data_format):
        # The projection reads the pre-activation (the Keras example); the
        # parameter-free shortcut is the block's input itself, subsampled.
        source = preact if kind == "projection" else x
        shortcut = _widening_shortcut(source, filters, strides, data_format, name, kind)
    y = _conv(filters, 3, strides, data_format, f"{name}_conv1")(preact)
    y = batch_norm(data_format, name=f"{name}_bn2")(y)
    y = keras.layers.Activation("relu", name=f"{name}_relu2")(y)
    y = _conv(filters, 3, 1, data_format, f"{name}_conv2")(y)
    return keras.layers.Add(name=f"{name}_add")([y, shortcut])


def build_resnet_cifar(depth, version=1, shortcut="projection"):
    """The builder of a CIFAR ResNet of `depth` layers, v1 or v2, with `shortcut`
    "projection" or "pad" (SHORTCUTS) where a stage changes size."""
    if (depth - 2) % 6:
        raise ValueError(f"CIFAR ResNet depth must be 6n+2, got {depth}")
    if version not in (1, 2):
        raise ValueError(f"version must be 1 or 2, got {version}")
    if shortcut not in SHORTCUTS:
        raise ValueError(f"shortcut must be one of {SHORTCUTS}, got {shortcut!r}")
    blocks_per_stage = (depth - 2) // 6
    block_fn = _basic_block_v1 if version == 1 else _basic_block_v2

    def build(num_classes, data_format, image_size):
        inputs = keras.Input(input_shape(image_size, data_format))
        x = _conv(16, 3, 1, data_format, "stem_conv")(inputs)
        if version == 1:
            x = batch_norm(data_format, name="stem_bn")(x)
            x = keras.layers.Activation("relu", name="stem_relu")(x)
        for stage, filters in enumerate((16, 32, 64)):
            for block in range(blocks_per_stage):
                strides = 2 if stage > 0 and block == 0 else 1
                x = block_fn(x, filters, strides, data_format,
                             f"stage{stage + 1}_block{block + 1}", shortcut)
        if version == 2:
            x = batch_norm(data_format, name="final_bn")(x)
            x = keras.layers.Activation("relu", name="final_relu")(x)
        x = keras.layers.GlobalAveragePooling2D(data_format=data_format, name="pool")(x)
        outputs = keras.layers.Dense(num_classes, name="logits")(x)
        suffix = ("" if version == 1 else "_v2") + ("" if shortcut == "projection" else "_pad")
        return keras.Model(inputs, outputs, name=f"resnet{depth}{suffix}")

    return build


def build_resnet_cifar_v1(depth):
    return build_resnet_cifar(depth, version=1)


def build_resnet_cifar_v2(depth):
    return build_resnet_cifar(depth, version=2)
