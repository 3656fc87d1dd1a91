"""The serial reference for tower-equivalence tests: a BN-free tiny model, its
data, stock-Keras stepping on whole global batches, and the closeness check."""
import keras
import numpy as np
import tensorflow as tf

STEPS = 3

LEARNING_RATE = 0.1

IMAGE_SHAPE = (6, 6, 2)

NUM_CLASSES = 4

def tiny_model():
    """BN-free conv net: exact equivalence holds only without batch statistics."""
    return keras.Sequential([
        keras.Input(IMAGE_SHAPE),
        keras.layers.Conv2D(3, 3, activation="relu", name="conv"),
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(NUM_CLASSES, name="logits"),
    ])

def data(global_batch, seed=7):
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((STEPS * global_batch,) + IMAGE_SHAPE).astype(np.float32)
    labels = rng.integers(0, NUM_CLASSES, STEPS * global_batch).astype(np.int32)
    return images, labels

def assert_close(actual, expected):
    for a, e in zip(actual, expected):
        scale = max(np.abs(e).max(), 1e-3)
        assert np.abs(a - e).max() <= 1e-5 * scale, (np.abs(a - e).max(), scale)



def keras_serial_steps(model, optimizer, images, labels, global_batch, steps):
    """The independent reference for equivalence tests: stock Keras stepping
    one model on consecutive global batches of mean sparse cross-entropy."""
    for k in range(steps):
        x = images[k * global_batch:(k + 1) * global_batch]
        y = labels[k * global_batch:(k + 1) * global_batch]
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
                y, logits, from_logits=True))
        optimizer.apply(tape.gradient(loss, model.trainable_variables),
                        model.trainable_variables)
    return model
