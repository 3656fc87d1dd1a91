"""A custom loss for a model with two outputs: logits and an auxiliary head.

    TOWERTRAIN_TINY=1 python examples/multi_output_loss.py

loss_fn(labels, outputs) returns one loss per example; `outputs` is what the
model returns (here a list of two tensors). towertrain sums it over each
tower's slice and divides by the global batch, so the gradient is that of the
mean over the whole batch, as in serial training.
"""
import os

import numpy as np

import towertrain

TINY = os.environ.get("TOWERTRAIN_TINY") == "1"


def two_headed_model(num_classes=10):
    import keras
    inputs = keras.Input((16, 16, 3))
    x = keras.layers.Conv2D(16, 3, activation="relu", name="conv1")(inputs)
    aux = keras.layers.GlobalAveragePooling2D(name="aux_pool")(x)
    aux_logits = keras.layers.Dense(num_classes, name="aux_logits")(aux)
    x = keras.layers.Conv2D(32, 3, strides=2, activation="relu", name="conv2")(x)
    x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    logits = keras.layers.Dense(num_classes, name="logits")(x)
    return keras.Model(inputs, [logits, aux_logits], name="two_heads")


def main_and_aux_loss(labels, outputs, aux_weight=0.4):
    """Inception-style: cross-entropy of the main head + 0.4 x that of the auxiliary one."""
    import keras
    logits, aux_logits = outputs
    main = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    aux = keras.losses.sparse_categorical_crossentropy(labels, aux_logits, from_logits=True)
    return main + aux_weight * aux


def main():
    towertrain.use_logical_cpus(2)
    rng = np.random.default_rng(0)
    images = rng.random((64, 16, 16, 3), dtype=np.float32)
    labels = rng.integers(0, 10, 64)
    model = two_headed_model()
    params = towertrain.Params(device="cpu", num_gpus=2, variable_update="replicated",
                               init_learning_rate=0.05)
    trainer = towertrain.Trainer(params, model=model, loss_fn=main_and_aux_loss,
                                 input_source=towertrain.from_arrays(images, labels, 32))
    for step in range(1, (4 if TINY else 100) + 1):
        result = trainer.step()
        print(f"step {step}: loss {result.loss:.4f}")
    trainer.sync_model()
    trainer.close()
    logits, _ = model.predict(images[:4], verbose=0)
    print("predicted classes:", logits.argmax(-1))


if __name__ == "__main__":
    main()
