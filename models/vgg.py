"""VGG 11/16/19 (Simonyan & Zisserman, configurations A, D, E).

Convs with biases and no batch norm, then flatten and two 4096-wide dense
layers with dropout, as keras.applications.VGG16 (138,357,544 parameters at
224x224, 1000 classes) plus tf_cnn_benchmarks' dropout.
"""
import keras

from .layers import conv2d
from .registry import input_shape

# Convs per stage; every stage ends in a 2x2 max pool.
_STAGES = {11: (1, 1, 2, 2, 2), 16: (2, 2, 3, 3, 3), 19: (2, 2, 4, 4, 4)}


def build_vgg(depth):
    """The builder of VGG `depth` (11, 16 or 19)."""
    if depth not in _STAGES:
        raise ValueError(f"VGG depth must be one of {sorted(_STAGES)}")

    def build(num_classes, data_format, image_size):
        inputs = keras.Input(input_shape(image_size, data_format))
        x = inputs
        for stage, (convs, filters) in enumerate(zip(_STAGES[depth],
                                                     (64, 128, 256, 512, 512))):
            for i in range(convs):
                x = conv2d(filters, 3, data_format, f"block{stage + 1}_conv{i + 1}",
                           activation="relu")(x)
            x = keras.layers.MaxPooling2D(2, data_format=data_format,
                                          name=f"block{stage + 1}_pool")(x)
        # Flatten goes through NHWC order whatever the format, so fc6's kernel
        # is the same variable in NCHW and NHWC.
        x = keras.layers.Flatten(data_format=data_format, name="flatten")(x)
        x = keras.layers.Dense(4096, activation="relu", name="fc6")(x)
        x = keras.layers.Dropout(0.5, name="drop6")(x)
        x = keras.layers.Dense(4096, activation="relu", name="fc7")(x)
        x = keras.layers.Dropout(0.5, name="drop7")(x)
        outputs = keras.layers.Dense(num_classes, name="logits")(x)
        return keras.Model(inputs, outputs, name=f"vgg{depth}")

    return build
