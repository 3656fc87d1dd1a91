"""trivial: flatten, one hidden unit, logits (tf_cnn_benchmarks' plumbing test)."""
import keras

from .registry import input_shape


def build_trivial(num_classes, data_format, image_size):
    return keras.Sequential([
        keras.Input(input_shape(image_size, data_format)),
        keras.layers.Flatten(data_format=data_format, name="flatten"),
        keras.layers.Dense(1, name="hidden"),
        keras.layers.Dense(num_classes, name="logits"),
    ], name="trivial")
