"""A run whose first half was written by towertrain as it was before its
settings and resume code moved (tests/state/written_before/: its checkpoint
and run record), and the command line both halves use.

The model is registered by the driver, so that the same command line runs on
any version of towertrain: a conv with fused batch norm, dropout and a dense
layer, trained with --distortions (random crops and flips), so both halves
draw masks and crops.

    PYTHONPATH=tests python -c "$(python -c 'from helpers import written_before as w; print(w.DRIVER)')" ...

wrote the folder, at commit 7eef2dc, with `command(data_dir, train_dir, "--num_epochs=2")`
on `cifar_files.write_dataset(data_dir, 72, 10, train_files=2)`.
"""
import sys

MODEL = "conv_bn_dropout"

DRIVER = f"""
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import towertrain  # sets TF_ENABLE_ONEDNN_OPTS before TensorFlow loads
import keras
import tensorflow as tf
tf.config.experimental.enable_op_determinism()
from towertrain import models

def build(num_classes, data_format, image_size):
    axis = 1 if data_format == "channels_first" else -1
    return keras.Sequential([
        keras.Input(models.input_shape(image_size, data_format)),
        keras.layers.Conv2D(4, 3, strides=2, data_format=data_format, name="conv"),
        models.FusedBatchNormalization(axis=axis, name="bn"),
        keras.layers.Activation("relu", name="relu"),
        keras.layers.Dropout(0.3, name="dropout"),
        keras.layers.GlobalAveragePooling2D(data_format=data_format, name="pool"),
        keras.layers.Dense(num_classes, name="logits"),
    ], name="{MODEL}")

models.register_model("{MODEL}", build, default_image_size=32, default_batch_size=8,
                      default_learning_rate=0.05, default_dataset="cifar10")
from towertrain.commands import train as cli
cli.run()
"""


def command(data_dir, train_dir, *flags):
    return [sys.executable, "-c", DRIVER, f"--model={MODEL}", "--device=cpu", "--num_gpus=2",
            "--variable_update=replicated", "--optimizer=momentum", "--batch_size=8",
            f"--data_dir={data_dir}", f"--train_dir={train_dir}", "--display_every=1",
            "--save_model_steps=5", "--distortions", *flags]
