"""CIFAR DenseNet (Huang et al. 2016), e.g. densenet40_k12.

depth = 3n + 4: a 16-filter 3x3 stem, three dense blocks of n layers
(BN-relu-conv3x3 with `growth` filters, concatenated onto the input), a
BN-relu-conv1x1-avgpool transition between blocks, and a final BN-relu and
global average pool. Batch norm as tf_cnn_benchmarks: momentum 0.9, eps 1e-5.
"""
import keras

from .layers import batch_norm, channel_axis, conv2d
from .registry import input_shape


def _bn_relu(x, data_format, name):
    x = batch_norm(data_format, name=f"{name}_bn", momentum=0.9, epsilon=1e-5)(x)
    return keras.layers.Activation("relu", name=f"{name}_relu")(x)


def build_densenet_cifar(depth, growth):
    """The builder of a CIFAR DenseNet of `depth` layers growing by `growth` filters."""
    if (depth - 4) % 3:
        raise ValueError(f"DenseNet depth must be 3n+4, got {depth}")
    layers_per_block = (depth - 4) // 3

    def build(num_classes, data_format, image_size):
        axis = channel_axis(data_format)
        inputs = keras.Input(input_shape(image_size, data_format))
        x = conv2d(16, 3, data_format, "stem_conv", use_bias=False,
                   kernel_initializer="he_normal")(inputs)
        for block in range(3):
            for layer in range(layers_per_block):
                name = f"block{block + 1}_layer{layer + 1}"
                y = _bn_relu(x, data_format, name)
                y = conv2d(growth, 3, data_format, f"{name}_conv", use_bias=False,
                           kernel_initializer="he_normal")(y)
                x = keras.layers.Concatenate(axis=axis, name=f"{name}_concat")([x, y])
            if block < 2:
                name = f"transition{block + 1}"
                channels = x.shape[axis]
                x = _bn_relu(x, data_format, name)
                x = conv2d(channels, 1, data_format, f"{name}_conv", use_bias=False,
                           kernel_initializer="he_normal")(x)
                x = keras.layers.AveragePooling2D(2, data_format=data_format,
                                                  name=f"{name}_pool")(x)
        x = _bn_relu(x, data_format, "final")
        x = keras.layers.GlobalAveragePooling2D(data_format=data_format, name="pool")(x)
        outputs = keras.layers.Dense(num_classes, name="logits")(x)
        return keras.Model(inputs, outputs, name=f"densenet{depth}_k{growth}")

    return build
