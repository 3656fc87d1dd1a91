"""LeNet and AlexNet (ImageNet and CIFAR variants), as in tf_cnn_benchmarks.

Conv stacks with biases and relu, flattened in NHWC order (Flatten with the
model's data_format transposes NCHW first), so the dense kernels are the same
variables in both data formats.
"""
import keras

from .layers import LocalResponseNormalization, conv2d
from .registry import input_shape


def _max_pool(size, strides, data_format, name, padding="valid"):
    return keras.layers.MaxPooling2D(size, strides=strides, padding=padding,
                                     data_format=data_format, name=name)


def _classifier(x, widths, num_classes, data_format, dropout=0.0):
    x = keras.layers.Flatten(data_format=data_format, name="flatten")(x)
    for i, width in enumerate(widths):
        x = keras.layers.Dense(width, activation="relu", name=f"fc{i + 1}")(x)
        if dropout:
            x = keras.layers.Dropout(dropout, name=f"drop{i + 1}")(x)
    return keras.layers.Dense(num_classes, name="logits")(x)


def build_lenet(num_classes, data_format, image_size):
    inputs = keras.Input(input_shape(image_size, data_format))
    x = conv2d(32, 5, data_format, "conv1", padding="valid", activation="relu")(inputs)
    x = _max_pool(2, 2, data_format, "pool1")(x)
    x = conv2d(64, 5, data_format, "conv2", padding="valid", activation="relu")(x)
    x = _max_pool(2, 2, data_format, "pool2")(x)
    outputs = _classifier(x, (512,), num_classes, data_format)
    return keras.Model(inputs, outputs, name="lenet")


def build_alexnet(num_classes, data_format, image_size):
    """One-tower AlexNet at 227x227 (tf_cnn_benchmarks' 224 + 3): fc6 sees 6x6x256."""
    inputs = keras.Input(input_shape(image_size, data_format))
    x = conv2d(64, 11, data_format, "conv1", strides=4, padding="valid",
               activation="relu")(inputs)
    x = _max_pool(3, 2, data_format, "pool1")(x)
    x = conv2d(192, 5, data_format, "conv2", activation="relu")(x)
    x = _max_pool(3, 2, data_format, "pool2")(x)
    x = conv2d(384, 3, data_format, "conv3", activation="relu")(x)
    x = conv2d(384, 3, data_format, "conv4", activation="relu")(x)
    x = conv2d(256, 3, data_format, "conv5", activation="relu")(x)
    x = _max_pool(3, 2, data_format, "pool5")(x)
    outputs = _classifier(x, (4096, 4096), num_classes, data_format, dropout=0.5)
    return keras.Model(inputs, outputs, name="alexnet")


def build_alexnet_cifar(num_classes, data_format, image_size):
    """The CIFAR-10 AlexNet of the TensorFlow tutorial: two conv+LRN layers, 384, 192."""
    inputs = keras.Input(input_shape(image_size, data_format))
    x = conv2d(64, 5, data_format, "conv1", activation="relu")(inputs)
    x = _max_pool(3, 2, data_format, "pool1", padding="same")(x)
    x = LocalResponseNormalization(data_format, name="norm1")(x)
    x = conv2d(64, 5, data_format, "conv2", activation="relu")(x)
    x = LocalResponseNormalization(data_format, name="norm2")(x)
    x = _max_pool(3, 2, data_format, "pool2", padding="same")(x)
    outputs = _classifier(x, (384, 192), num_classes, data_format)
    return keras.Model(inputs, outputs, name="alexnet_cifar")
