"""cifar_cnn: the Keras CIFAR-10 example CNN (1,250,858 parameters).

Returns logits; the example's final softmax is folded into the loss.
"""
import keras

from .registry import input_shape


def build_cifar_cnn(num_classes, data_format, image_size):
    layers = keras.layers

    def conv(filters, padding, name):
        return layers.Conv2D(filters, 3, padding=padding, activation="relu",
                             data_format=data_format, name=name)

    return keras.Sequential([
        keras.Input(input_shape(image_size, data_format)),
        conv(32, "same", "conv1"), conv(32, "valid", "conv2"),
        layers.MaxPooling2D(2, data_format=data_format, name="pool1"),
        layers.Dropout(0.25, name="dropout1"),
        conv(64, "same", "conv3"), conv(64, "valid", "conv4"),
        layers.MaxPooling2D(2, data_format=data_format, name="pool2"),
        layers.Dropout(0.25, name="dropout2"),
        # Flatten transposes NCHW to NHWC first, so the dense kernel is the
        # same whatever the data format.
        layers.Flatten(data_format=data_format, name="flatten"),
        layers.Dense(512, activation="relu", name="fc1"),
        layers.Dropout(0.5, name="dropout3"),
        layers.Dense(num_classes, name="logits"),
    ], name="cifar_cnn")
