"""The registered models' names and defaults, readable without Keras.

Installed as `towertrain.models.catalog`. Each built-in model is one row: its
defaults (tf_cnn_benchmarks' image size, batch size per device, learning rate
and dataset; the smallest image it takes) and where its builder lives. The
builder's module imports Keras and TensorFlow (seconds), so it is imported
only when the model is built: checking `--model` or reading a model's
defaults costs nothing.

The rows are registered in towertrain.models.registry when this module is
imported (towertrain.models imports it first), so registered_names() and
get_spec() here also see the models a user added with register_model(); a
user's spec holds the builder it was given.

Nothing here, nor in registry.py, may import Keras or TensorFlow, even
indirectly (tests/models/test_catalog.py checks it in a fresh process).
"""
import dataclasses
import importlib
from typing import Optional

from . import recipes, registry
from .registry import DATASET_CLASSES, ModelSpec  # noqa: F401 - read here too


@dataclasses.dataclass(frozen=True)
class BuilderRef:
    """Where a built-in builder lives: `towertrain.models.<module>.<attribute>`.

    args None: the attribute is the builder. Otherwise it is a factory and
    attribute(*args, **dict(kwargs)) returns the builder (build_resnet_cifar_v1(20)).
    Calling the ref imports the module and builds, so a ModelSpec holding it
    is used as one holding the builder itself.
    """
    module: str
    attribute: str
    args: Optional[tuple] = None
    kwargs: tuple = ()  # (name, value) pairs: hashable like the rest of the spec

    def resolve(self):
        """The builder itself; imports its module (and so Keras)."""
        found = getattr(importlib.import_module(f".{self.module}", __package__),
                        self.attribute)
        if self.args is None:
            return found
        return found(*self.args, **dict(self.kwargs))

    def __call__(self, num_classes, data_format, image_size):
        return self.resolve()(num_classes=num_classes, data_format=data_format,
                              image_size=image_size)

    def __str__(self):
        where = f"{__package__}.{self.module}.{self.attribute}"
        if self.args is None:
            return where
        given = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        return f"{where}({', '.join(given)})"


def _builder(module, attribute):
    return BuilderRef(module, attribute)


def _factory(module, attribute, *args, **kwargs):
    return BuilderRef(module, attribute, args, tuple(sorted(kwargs.items())))


def _resnet_imagenet(depth, **kwargs):
    return _factory("resnet_imagenet", "build_resnet_imagenet", depth, **kwargs)


def _cifar(name, builder, batch_size, learning_rate, min_image_size=1, recipe=None):
    return ModelSpec(name, builder, default_image_size=32, default_batch_size=batch_size,
                     default_learning_rate=learning_rate, default_dataset="cifar10",
                     min_image_size=min_image_size, learning_rate_recipe=recipe)


def _imagenet(name, builder, image_size, batch_size, learning_rate, min_image_size=1,
              recipe=None):
    return ModelSpec(name, builder, default_image_size=image_size,
                     default_batch_size=batch_size, default_learning_rate=learning_rate,
                     default_dataset="imagenet", min_image_size=min_image_size,
                     learning_rate_recipe=recipe)


# What --model (and Params(model=None)) builds when not given: tf_cnn_benchmarks' default.
DEFAULT_MODEL = "trivial"

# Names and defaults follow tf_cnn_benchmarks; alexnet_cifar is its alexnet
# with --data_name=cifar10. recipe: the learning-rate schedule of the
# tf_cnn_benchmarks class that overrides get_learning_rate (models/recipes.py);
# without one, default_learning_rate at every step, as its Model base class.
# default_learning_rate stays the constant a run recorded before recipes
# trained with (towertrain.plan.learning_rate.source keeps it at a resume).
BUILTIN_MODELS = (
    _cifar("trivial", _builder("trivial", "build_trivial"), 32, 0.005),
    # min_image_size: two valid 3x3 convs and 2x2 pools (cifar_cnn); two 2x2
    # transition pools (densenet).
    _cifar("cifar_cnn", _builder("cifar_cnn", "build_cifar_cnn"), 32, 0.01,
           min_image_size=10),
    _cifar("alexnet_cifar", _builder("lenet_alexnet", "build_alexnet_cifar"), 128, 0.1,
           recipe=recipes.ALEXNET_CIFAR),
    _cifar("densenet40_k12", _factory("densenet", "build_densenet_cifar", 40, 12), 64, 0.1,
           min_image_size=4, recipe=recipes.DENSENET_CIFAR),
    *(_cifar(f"resnet{depth}{suffix}", _factory("resnet_cifar", factory, depth), 64, 0.1,
             recipe=recipes.RESNET_CIFAR)
      for depth in (20, 32, 44, 56, 110)
      for suffix, factory in (("", "build_resnet_cifar_v1"),
                              ("_v2", "build_resnet_cifar_v2"))),
    # LeNet reads 28x28 images; tf_cnn_benchmarks trains it on the ImageNet input.
    # min_image_size: two valid 5x5 convs and 2x2 pools (lenet); an 11x11/4 conv
    # and three valid 3x3/2 pools (alexnet); inception3's valid stem and
    # reductions; vgg's five 2x2 pools.
    _imagenet("lenet", _builder("lenet_alexnet", "build_lenet"), 28, 32, 0.005,
              min_image_size=16),
    _imagenet("alexnet", _builder("lenet_alexnet", "build_alexnet"), 227, 512, 0.005,
              min_image_size=67),
    _imagenet("googlenet", _builder("googlenet", "build_googlenet"), 224, 32, 0.005),
    _imagenet("inception3", _builder("inception", "build_inception3"), 299, 32, 0.005,
              min_image_size=75),
    _imagenet("resnet50", _resnet_imagenet(50), 224, 64, 0.1,
              recipe=recipes.RESNET_IMAGENET),
    _imagenet("resnet50_v1.5", _resnet_imagenet(50, v1_5=True), 224, 64, 0.1,
              recipe=recipes.RESNET_IMAGENET),
    _imagenet("resnet101", _resnet_imagenet(101), 224, 32, 0.1,
              recipe=recipes.RESNET_IMAGENET),
    _imagenet("resnet152", _resnet_imagenet(152), 224, 32, 0.1,
              recipe=recipes.RESNET_IMAGENET),
    *(_imagenet(f"vgg{depth}", _factory("vgg", "build_vgg", depth), 224, 32, 0.005,
                min_image_size=32)
      for depth in (11, 16, 19)),
)

# The spec's fields besides the builder: what a name means before it is built.
DEFAULT_FIELDS = tuple(f.name for f in dataclasses.fields(ModelSpec) if f.name != "builder")


def registered_names():
    """Every model --model accepts, built-in or registered by the user, sorted."""
    return registry.registered_names()


def get_spec(name) -> ModelSpec:
    """A registered model's spec; ValueError listing the known names otherwise."""
    return registry.get_spec(name)


def defaults(name) -> dict:
    """{field: value} of a registered model's spec, all but the builder."""
    spec = get_spec(name)
    return {field: getattr(spec, field) for field in DEFAULT_FIELDS}


for _spec in BUILTIN_MODELS:
    registry.register_model(_spec.name, _spec.builder, _spec.default_image_size,
                            _spec.default_batch_size, _spec.default_learning_rate,
                            _spec.default_dataset, min_image_size=_spec.min_image_size,
                            learning_rate_recipe=_spec.learning_rate_recipe)
del _spec
