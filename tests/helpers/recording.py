"""A model that maps ids to logits and a loss that records the labels each tower
trains on: to count which examples a step saw."""
import keras
import numpy as np
import tensorflow as tf


def id_model(num_classes, shape=(2, 2, 1)):
    return keras.Sequential([keras.Input(shape), keras.layers.Flatten(),
                             keras.layers.Dense(num_classes)])


def recording_loss(seen):
    """Softmax cross-entropy that also records the labels each tower trains on."""
    def record(labels):
        seen.extend(labels.numpy().tolist())
        return np.float32(0)

    def loss_fn(labels, logits):
        zero = tf.py_function(record, [labels], tf.float32)
        return keras.losses.sparse_categorical_crossentropy(
            labels, logits, from_logits=True) + zero
    return loss_fn

