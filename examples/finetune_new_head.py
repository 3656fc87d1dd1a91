"""Fine-tuning: train a model, checkpoint it, then train a new head on its features.

    TOWERTRAIN_TINY=1 python examples/finetune_new_head.py [--train_dir=DIR]

1. Pretrain a 10-class network with Params(train_dir=...): train() saves a
   checkpoint at the end (and resumes if run again).
2. Read the checkpoint into a fresh copy of the network with
   Trainer.restore: its keys are the variables' paths in the model, so any
   copy of the same layers reads it (any mode or device count).
3. Build a new model from its feature layers (frozen) plus a new 3-class
   head, and train that with towertrain.
"""
import os
import sys
import tempfile

import numpy as np

import towertrain

TINY = os.environ.get("TOWERTRAIN_TINY") == "1"


def backbone_model(num_classes):
    import keras
    inputs = keras.Input((16, 16, 3))
    x = keras.layers.Conv2D(16, 3, activation="relu", name="conv1")(inputs)
    x = keras.layers.Conv2D(16, 3, strides=2, activation="relu", name="conv2")(x)
    x = keras.layers.GlobalAveragePooling2D(name="features")(x)
    return keras.Model(inputs, keras.layers.Dense(num_classes, name="logits")(x),
                       name="pretrain_net")


def read_checkpoint(model, train_dir, params, input_source):
    """Reads the latest checkpoint in train_dir into `model` (the same layers):
    Trainer.restore fills the trainer's copies and then the Keras model."""
    import tensorflow as tf
    trainer = towertrain.Trainer(params, model=model, input_source=input_source)
    trainer.restore(tf.train.latest_checkpoint(train_dir))
    trainer.close()


def main(argv):
    import keras
    train_dir = next((a.split("=", 1)[1] for a in argv if a.startswith("--train_dir=")),
                     None) or tempfile.mkdtemp(prefix="finetune_")
    towertrain.use_logical_cpus(2)
    rng = np.random.default_rng(0)
    images = rng.random((64, 16, 16, 3), dtype=np.float32)
    steps = 3 if TINY else 200

    # 1. Pretrain on 10 classes; the checkpoint lands in train_dir.
    pretrain = towertrain.Params(device="cpu", num_gpus=2, variable_update="replicated",
                                 init_learning_rate=0.05, num_warmup_batches=0,
                                 num_batches=steps, display_every=steps, train_dir=train_dir)
    pretrained = backbone_model(10)
    pretrain_input = towertrain.from_arrays(images, rng.integers(0, 10, 64), 32)
    trainer = towertrain.Trainer(pretrain, model=pretrained, input_source=pretrain_input)
    trainer.train()
    trainer.close()

    # 2. A fresh copy of the network, read from the checkpoint (no train_dir:
    # this trainer only reads; it never trains or saves).
    restored = backbone_model(10)
    read_checkpoint(restored, train_dir, pretrain.replace(train_dir=None), pretrain_input)
    print("restored equals pretrained:", all(
        np.array_equal(a, b) for a, b in zip(restored.get_weights(), pretrained.get_weights())))
    backbone_before = restored.get_layer("conv1").kernel.numpy().copy()

    # 3. Its features, frozen, and a new 3-class head.
    features = restored.get_layer("features").output
    for layer in restored.layers:
        layer.trainable = False
    head = keras.layers.Dense(3, name="new_head")(features)
    finetune_model = keras.Model(restored.input, head, name="finetune_net")
    finetune = towertrain.Params(device="cpu", num_gpus=2, init_learning_rate=0.1,
                                 num_warmup_batches=0, num_batches=steps,
                                 display_every=steps)
    trainer = towertrain.Trainer(finetune, model=finetune_model, input_source=(
        towertrain.from_arrays(images, rng.integers(0, 3, 64), 32)))
    trainer.train()
    trainer.close()
    conv = finetune_model.get_layer("conv1").kernel.numpy()
    print("backbone unchanged by fine-tuning:", np.array_equal(conv, backbone_before))


if __name__ == "__main__":
    main(sys.argv[1:])
