"""Your own Keras model on numpy data: the Keras CIFAR-10 CNN, on 2 logical CPUs.

    python examples/keras_cifar10_cnn.py            # random CIFAR-shaped data, 200 steps
    TOWERTRAIN_TINY=1 python examples/keras_cifar10_cnn.py   # a few steps (CI)

Replace `load_data()` with keras.datasets.cifar10.load_data() where you can
download it. The model is the classic Keras example, except that it ends in
logits (no softmax): towertrain's default loss is softmax cross-entropy on logits.
"""
import os

import numpy as np

import towertrain

TINY = os.environ.get("TOWERTRAIN_TINY") == "1"
NUM_DEVICES = 2


def load_data(n):
    rng = np.random.default_rng(0)
    images = rng.random((n, 32, 32, 3), dtype=np.float32)
    labels = rng.integers(0, 10, (n, 1))  # the shape keras.datasets gives: (n, 1)
    return images, labels


def cifar10_cnn():
    import keras
    layers = keras.layers
    return keras.Sequential([
        keras.Input((32, 32, 3)),
        layers.Conv2D(32, 3, padding="same", activation="relu", name="conv1"),
        layers.Conv2D(32, 3, activation="relu", name="conv2"),
        layers.MaxPooling2D(name="pool1"),
        layers.Dropout(0.25, name="drop1"),
        layers.Conv2D(64, 3, padding="same", activation="relu", name="conv3"),
        layers.Conv2D(64, 3, activation="relu", name="conv4"),
        layers.MaxPooling2D(name="pool2"),
        layers.Dropout(0.25, name="drop2"),
        layers.Flatten(name="flatten"),
        layers.Dense(512, activation="relu", name="fc"),
        layers.Dropout(0.5, name="drop3"),
        layers.Dense(10, name="logits"),
    ], name="keras_cifar10_cnn")


def main():
    towertrain.use_logical_cpus(NUM_DEVICES)  # before any TensorFlow op runs
    steps = 3 if TINY else 200
    images, labels = load_data(64 if TINY else 5000)
    model = cifar10_cnn()
    params = towertrain.Params(device="cpu", num_gpus=NUM_DEVICES,
                               variable_update="replicated", optimizer="momentum",
                               init_learning_rate=0.01, num_warmup_batches=1,
                               num_batches=steps - 1, display_every=1 if TINY else 20)
    trainer = towertrain.Trainer(params, model=model, input_source=towertrain.from_arrays(
        images, labels, global_batch=32 * NUM_DEVICES, shuffle=True))
    trainer.train()  # prints tf_cnn_benchmarks-style lines; syncs `model` at the end
    trainer.close()
    # The model ends in logits (the loss applies the softmax): softmax them here.
    logits = model.predict(images[:4], verbose=0)
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    print("predicted classes:", probabilities.argmax(-1))


if __name__ == "__main__":
    main()
