"""Keras model definitions and the registry the engine reads by name.

Installed as `towertrain.models`. Models never import the engine. Names and
defaults (image size, batch size per device, learning rate, dataset) follow
tf_cnn_benchmarks; `alexnet_cifar` is its `alexnet` with --data_name=cifar10.
"""
from .registry import (DATASET_CLASSES, ModelSpec, build, decays_by_default, get_spec,
                       input_shape, keras_data_format, register_model, registered_names,
                       weight_decay_mask, weight_decay_variables)
from .layers import FusedBatchNormalization, LocalResponseNormalization, batch_norm
from .cifar_cnn import build_cifar_cnn
from .densenet import densenet_cifar
from .googlenet import build_googlenet
from .inception import build_inception3
from .lenet_alexnet import build_alexnet, build_alexnet_cifar, build_lenet
from .resnet_cifar import resnet_cifar, resnet_cifar_v1, resnet_cifar_v2
from .resnet_imagenet import resnet_imagenet
from .trivial import build_trivial
from .vgg import vgg


def _cifar(name, builder, batch_size, learning_rate, min_image_size=1):
    register_model(name, builder, default_image_size=32, default_batch_size=batch_size,
                   default_learning_rate=learning_rate, default_dataset="cifar10",
                   min_image_size=min_image_size)


def _imagenet(name, builder, image_size, batch_size, learning_rate, min_image_size=1):
    register_model(name, builder, default_image_size=image_size,
                   default_batch_size=batch_size, default_learning_rate=learning_rate,
                   default_dataset="imagenet", min_image_size=min_image_size)


_cifar("trivial", build_trivial, 32, 0.005)
# min_image_size: two valid 3x3 convs and 2x2 pools (cifar_cnn); two 2x2
# transition pools (densenet).
_cifar("cifar_cnn", build_cifar_cnn, 32, 0.01, min_image_size=10)
_cifar("alexnet_cifar", build_alexnet_cifar, 128, 0.1)
_cifar("densenet40_k12", densenet_cifar(40, 12), 64, 0.1, min_image_size=4)
for _depth in (20, 32, 44, 56, 110):
    _cifar(f"resnet{_depth}", resnet_cifar_v1(_depth), 64, 0.1)
    _cifar(f"resnet{_depth}_v2", resnet_cifar_v2(_depth), 64, 0.1)

# LeNet reads 28x28 images; tf_cnn_benchmarks trains it on the ImageNet input.
# min_image_size: two valid 5x5 convs and 2x2 pools (lenet); an 11x11/4 conv
# and three valid 3x3/2 pools (alexnet); inception3's valid stem and reductions;
# vgg's five 2x2 pools.
_imagenet("lenet", build_lenet, 28, 32, 0.005, min_image_size=16)
_imagenet("alexnet", build_alexnet, 227, 512, 0.005, min_image_size=67)
_imagenet("googlenet", build_googlenet, 224, 32, 0.005)
_imagenet("inception3", build_inception3, 299, 32, 0.005, min_image_size=75)
_imagenet("resnet50", resnet_imagenet(50), 224, 64, 0.1)
_imagenet("resnet50_v1.5", resnet_imagenet(50, v1_5=True), 224, 64, 0.1)
_imagenet("resnet101", resnet_imagenet(101), 224, 32, 0.1)
_imagenet("resnet152", resnet_imagenet(152), 224, 32, 0.1)
for _depth in (11, 16, 19):
    _imagenet(f"vgg{_depth}", vgg(_depth), 224, 32, 0.005, min_image_size=32)

__all__ = ["DATASET_CLASSES", "ModelSpec", "build", "decays_by_default", "get_spec",
           "input_shape", "keras_data_format", "register_model", "registered_names",
           "weight_decay_mask", "weight_decay_variables",
           "FusedBatchNormalization", "LocalResponseNormalization", "batch_norm",
           "densenet_cifar", "resnet_cifar", "resnet_imagenet", "vgg"]
