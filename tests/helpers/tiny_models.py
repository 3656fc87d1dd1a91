"""The tests' tiny model ckpt_tiny (conv + fused BN + dense), a second
layout, tiny_dense, a dropout one, tiny_dropout, ckpt_tiny with dropout,
tiny_dropout_bn, and a wide one of 4.2 MB, tiny_wide, registered once on
import, plus the Params, eval data and evaluation the checkpoint tests share."""
import keras
import numpy as np
import tensorflow as tf

from towertrain import Params, models
from towertrain.engine.evaluation import evaluator as evaluation
from towertrain.input_pipeline.base import EvalData
from towertrain.models import FusedBatchNormalization

NUM_EVAL = 23  # eval batches of 5: uneven over 2 and 4 devices, uneven last batch


def build_tiny(num_classes, data_format, image_size):
    """conv + fused BN + pool + dense: every kind of variable, in milliseconds."""
    return keras.Sequential(_tiny_layers(num_classes, data_format, image_size),
                            name="ckpt_tiny")


def _tiny_layers(num_classes, data_format, image_size, before_dense=()):
    """ckpt_tiny's layers, with `before_dense` between its pool and its dense layer."""
    axis = 1 if data_format == "channels_first" else -1
    return [
        keras.Input(models.input_shape(image_size, data_format)),
        keras.layers.Conv2D(4, 3, data_format=data_format, name="conv"),
        FusedBatchNormalization(axis=axis, name="bn"),
        keras.layers.Activation("relu", name="relu"),
        keras.layers.GlobalAveragePooling2D(data_format=data_format, name="pool"),
        *before_dense,
        keras.layers.Dense(num_classes, name="logits"),
    ]


models.register_model("ckpt_tiny", build_tiny, default_image_size=8, default_batch_size=3,
                      default_learning_rate=0.1, default_dataset="cifar10", overwrite=True)


def build_tiny_dense(num_classes, data_format, image_size):
    """Another layout on ckpt_tiny's images (dense only, no batch norm), for
    tests that need a second model."""
    return keras.Sequential([
        keras.Input(models.input_shape(image_size, data_format)),
        keras.layers.Flatten(data_format=data_format, name="flatten"),
        keras.layers.Dense(num_classes, name="logits"),
    ], name="tiny_dense")


models.register_model("tiny_dense", build_tiny_dense, default_image_size=8,
                      default_batch_size=3, default_learning_rate=0.1,
                      default_dataset="cifar10", overwrite=True)


def build_tiny_dropout(num_classes, data_format, image_size):
    """ckpt_tiny's images through a dropout layer: each tower's and each
    micro-batch's masks are draws of their own (engine/step/towers.py)."""
    return keras.Sequential([
        keras.Input(models.input_shape(image_size, data_format)),
        keras.layers.Flatten(data_format=data_format, name="flatten"),
        keras.layers.Dense(16, name="hidden"),
        keras.layers.Dropout(0.5, name="dropout"),
        keras.layers.Dense(num_classes, name="logits"),
    ], name="tiny_dropout")


models.register_model("tiny_dropout", build_tiny_dropout, default_image_size=8,
                      default_batch_size=3, default_learning_rate=0.1,
                      default_dataset="cifar10", overwrite=True)


def build_tiny_dropout_bn(num_classes, data_format, image_size):
    """ckpt_tiny with a dropout layer before its dense one: batch-norm
    statistics (float32) and a seed-generator state (int64) among its
    non-trainable values."""
    return keras.Sequential(
        _tiny_layers(num_classes, data_format, image_size,
                     before_dense=[keras.layers.Dropout(0.5, name="dropout")]),
        name="tiny_dropout_bn")


models.register_model("tiny_dropout_bn", build_tiny_dropout_bn, default_image_size=8,
                      default_batch_size=3, default_learning_rate=0.1,
                      default_dataset="cifar10", overwrite=True)


def build_tiny_wide(num_classes, data_format, image_size):
    """ckpt_tiny's images through one wide dense layer: 4.2 MB of float32
    gradients (--gradient_pack_mb=auto has 3 distinct sizes to time: one
    pack, 4 MB, 1 MB) in a step of a few milliseconds."""
    return keras.Sequential([
        keras.Input(models.input_shape(image_size, data_format)),
        keras.layers.Flatten(data_format=data_format, name="flatten"),
        keras.layers.Dense(5200, name="wide"),
        keras.layers.Dense(num_classes, name="logits"),
    ], name="tiny_wide")


models.register_model("tiny_wide", build_tiny_wide, default_image_size=8,
                      default_batch_size=3, default_learning_rate=0.01,
                      default_dataset="cifar10", overwrite=True)


def build_tiny_wide_random(num_classes, data_format, image_size):
    """ckpt_tiny's conv and batch norm, dropout, then a wide dense layer, on
    CIFAR's 32x32 images: 4.3 MB of float32 gradients (3 distinct pack
    sizes, as tiny_wide) in a step that draws randomness and keeps
    batch-norm statistics."""
    axis = 1 if data_format == "channels_first" else -1
    return keras.Sequential([
        keras.Input(models.input_shape(image_size, data_format)),
        keras.layers.Conv2D(4, 3, data_format=data_format, name="conv"),
        FusedBatchNormalization(axis=axis, name="bn"),
        keras.layers.Activation("relu", name="relu"),
        keras.layers.Dropout(0.5, name="dropout"),
        keras.layers.Flatten(data_format=data_format, name="flatten"),
        keras.layers.Dense(300, name="wide"),
        keras.layers.Dense(num_classes, name="logits"),
    ], name="tiny_wide_random")


models.register_model("tiny_wide_random", build_tiny_wide_random, default_image_size=32,
                      default_batch_size=3, default_learning_rate=0.01,
                      default_dataset="cifar10", overwrite=True)


def tiny_params(mode="replicated", gpus=2, fmt="NHWC", **kw):
    kw.setdefault("num_batches", 3)
    return Params(model="ckpt_tiny", device="cpu", num_gpus=gpus, data_format=fmt,
                  variable_update=mode, optimizer="momentum", num_warmup_batches=0,
                  display_every=100, **kw)


def eval_data(fmt):
    rng = np.random.default_rng(7)
    images = rng.standard_normal((NUM_EVAL, 8, 8, 3)).astype(np.float32)
    labels = rng.integers(0, 10, NUM_EVAL).astype(np.int32)
    if fmt == "NCHW":
        images = images.transpose(0, 3, 1, 2)
    return EvalData(tf.data.Dataset.from_tensor_slices((images, labels)).batch(5), NUM_EVAL,
                    "test eval set")


def evaluate(trainer):
    evaluator = evaluation.Evaluator(trainer.model, trainer.variables, trainer.devices)
    return evaluator.evaluate(eval_data(trainer.data_format), keep_logits=True)
