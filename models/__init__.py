"""Keras model definitions and the registry the engine reads by name.

Installed as `towertrain.models`. Models never import the engine. Names and
defaults (image size, batch size per device, learning rate, dataset) follow
tf_cnn_benchmarks; `alexnet_cifar` is its `alexnet` with --data_name=cifar10.

Importing this package imports no Keras: the registry and the catalog of
built-in models (towertrain.models.catalog) are plain Python, so validating
--model or reading a model's defaults is instant. The layers and the builders
(FusedBatchNormalization, build_resnet_cifar, ...) import on first use, and a
built-in model's builder module when the model is built. Every builder (or
factory of builders, such as build_vgg(16)) is named build_*, so no name here
is also a submodule's.
"""
import importlib

from . import catalog  # registers the built-in models (by where their builders live)
from .recipes import LearningRateRecipe
from .registry import (DATASET_CLASSES, ModelSpec, build, decays_by_default, get_spec,
                       input_shape, keras_data_format, register_model, registered_names,
                       weight_decay_mask, weight_decay_variables)

# The Keras-bound names: {name: the submodule defining it}. Importing them here
# would import Keras with the registry, so they import when first read.
_KERAS_BOUND = {
    "FusedBatchNormalization": "layers", "LocalResponseNormalization": "layers",
    "batch_norm": "layers",
    "build_cifar_cnn": "cifar_cnn",
    "build_densenet_cifar": "densenet",
    "build_googlenet": "googlenet",
    "build_inception3": "inception",
    "build_alexnet": "lenet_alexnet", "build_alexnet_cifar": "lenet_alexnet",
    "build_lenet": "lenet_alexnet",
    "build_resnet_cifar": "resnet_cifar", "build_resnet_cifar_v1": "resnet_cifar",
    "build_resnet_cifar_v2": "resnet_cifar",
    "build_resnet_imagenet": "resnet_imagenet",
    "build_trivial": "trivial",
    "build_vgg": "vgg",
}


def __getattr__(name):
    # Called only for a name not bound yet (PEP 562); binding it makes later reads plain.
    if name not in _KERAS_BOUND:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_KERAS_BOUND[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_KERAS_BOUND))


__all__ = ["DATASET_CLASSES", "LearningRateRecipe", "ModelSpec", "build", "decays_by_default",
           "get_spec", "input_shape", "keras_data_format", "register_model",
           "registered_names", "weight_decay_mask", "weight_decay_variables",
           *sorted(_KERAS_BOUND)]
