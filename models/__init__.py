"""Keras model definitions and the registry the engine reads by name.

Installed as `towertrain.models`. Models never import the engine.
"""
from .registry import (DATASET_CLASSES, ModelSpec, build, get_spec, input_shape,
                       keras_data_format, register_model, registered_names)
from .layers import FusedBatchNormalization
from .cifar_cnn import build_cifar_cnn
from .resnet_cifar import resnet_cifar_v1
from .trivial import build_trivial

register_model("trivial", build_trivial, default_image_size=32, default_batch_size=32,
               default_learning_rate=0.005, default_dataset="cifar10")
register_model("cifar_cnn", build_cifar_cnn, default_image_size=32, default_batch_size=32,
               default_learning_rate=0.01, default_dataset="cifar10")
register_model("resnet20", resnet_cifar_v1(20), default_image_size=32, default_batch_size=64,
               default_learning_rate=0.1, default_dataset="cifar10")

__all__ = ["DATASET_CLASSES", "ModelSpec", "build", "get_spec", "input_shape",
           "keras_data_format", "register_model", "registered_names",
           "FusedBatchNormalization"]
