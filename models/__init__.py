"""Keras model definitions and the registry the engine reads by name.

Installed as `towertrain.models`. Models never import the engine. Names and
defaults (image size, batch size per device, learning rate, dataset) follow
tf_cnn_benchmarks; `alexnet_cifar` is its `alexnet` with --data_name=cifar10.

Importing this package imports no Keras: the registry and the catalog of
built-in models (towertrain.models.catalog) are plain Python, so validating
--model or reading a model's defaults is instant. The layers and builders
(FusedBatchNormalization, resnet_cifar, ...) import on first use, and a
built-in model's builder module when the model is built.
"""
import importlib
import sys
import types

from . import catalog  # registers the built-in models (by where their builders live)
from .recipes import LearningRateRecipe
from .registry import (DATASET_CLASSES, ModelSpec, build, decays_by_default, get_spec,
                       input_shape, keras_data_format, register_model, registered_names,
                       weight_decay_mask, weight_decay_variables)

# The Keras-bound names: {name: the submodule defining it}, imported on first use.
_LAZY = {
    "FusedBatchNormalization": "layers", "LocalResponseNormalization": "layers",
    "batch_norm": "layers",
    "build_cifar_cnn": "cifar_cnn",
    "densenet_cifar": "densenet",
    "build_googlenet": "googlenet",
    "build_inception3": "inception",
    "build_alexnet": "lenet_alexnet", "build_alexnet_cifar": "lenet_alexnet",
    "build_lenet": "lenet_alexnet",
    "resnet_cifar": "resnet_cifar", "resnet_cifar_v1": "resnet_cifar",
    "resnet_cifar_v2": "resnet_cifar",
    "resnet_imagenet": "resnet_imagenet",
    "build_trivial": "trivial",
    "vgg": "vgg",
}
_SUBMODULES = frozenset(_LAZY.values())


def __getattr__(name):
    # Only called for a name not bound yet; binding it makes later reads plain.
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)


class _Package(types.ModuleType):
    """Importing a submodule binds it on its package, and three share their name
    with the builder factory they define (resnet_cifar, resnet_imagenet, vgg).
    towertrain.models.vgg has always been the factory, so keep it the factory
    whichever comes first: building a model imports its module."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and _LAZY.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = ["DATASET_CLASSES", "LearningRateRecipe", "ModelSpec", "build", "decays_by_default", "get_spec",
           "input_shape", "keras_data_format", "register_model", "registered_names",
           "weight_decay_mask", "weight_decay_variables",
           "FusedBatchNormalization", "LocalResponseNormalization", "batch_norm",
           "densenet_cifar", "resnet_cifar", "resnet_imagenet", "vgg"]
