"""Model registry: names -> Keras model builders plus their defaults.

A builder is `builder(num_classes, data_format, image_size) -> keras.Model`
taking images in `data_format` ('channels_first' or 'channels_last') and
returning logits of shape (batch, num_classes).

Weight decay: `weight_decay_variables(model, name)` lists the variables that
get L2 decay. By default those are the conv and dense kernels (rank >= 2),
never batch-norm gamma/beta or biases (as tf_cnn_benchmarks); a model can
register its own `weight_decay_filter(variable) -> bool`.
"""
import dataclasses
from typing import Callable, Optional

from .recipes import LearningRateRecipe

_DATA_FORMAT_ALIASES = {
    "NCHW": "channels_first", "channels_first": "channels_first",
    "NHWC": "channels_last", "channels_last": "channels_last",
}
DATASET_CLASSES = {"cifar10": 10, "imagenet": 1000}


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str
    builder: Callable
    default_image_size: int
    default_batch_size: int
    default_learning_rate: float
    default_dataset: str
    weight_decay_filter: Optional[Callable] = None  # None -> decays_by_default
    min_image_size: int = 1  # the smallest input the architecture takes
    # Its own learning-rate schedule (towertrain.models.recipes), used when no
    # learning-rate flag is given; None: default_learning_rate at every step.
    learning_rate_recipe: Optional[LearningRateRecipe] = None


_REGISTRY = {}


def register_model(name, builder, default_image_size, default_batch_size,
                   default_learning_rate=0.1, default_dataset="imagenet",
                   overwrite=False, weight_decay_filter=None, min_image_size=1,
                   learning_rate_recipe=None):
    """Makes `--model=name` available. Raises ValueError on a duplicate name.

    weight_decay_filter: variable -> bool choosing the L2-decayed variables
      (default: decays_by_default). min_image_size: build() refuses smaller
      images with a clear message instead of a shape error deep in the model.
    learning_rate_recipe: a towertrain.models.recipes.LearningRateRecipe the
      model trains with when no learning-rate flag is given (default: the
      constant default_learning_rate).
    """
    if name in _REGISTRY and not overwrite:
        raise ValueError(f"model {name!r} is already registered; pass overwrite=True "
                         "to replace it")
    if default_dataset not in DATASET_CLASSES:
        raise ValueError(f"default_dataset must be one of {sorted(DATASET_CLASSES)}")
    if learning_rate_recipe is not None and not isinstance(learning_rate_recipe,
                                                           LearningRateRecipe):
        raise ValueError("learning_rate_recipe must be a towertrain.models.recipes."
                         f"LearningRateRecipe, got {type(learning_rate_recipe).__name__}")
    _REGISTRY[name] = ModelSpec(name, builder, default_image_size, default_batch_size,
                                default_learning_rate, default_dataset,
                                weight_decay_filter, min_image_size, learning_rate_recipe)


def registered_names():
    return sorted(_REGISTRY)


def get_spec(name) -> ModelSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known models: "
                         f"{', '.join(registered_names())}") from None


def keras_data_format(data_format: str) -> str:
    try:
        return _DATA_FORMAT_ALIASES[data_format]
    except KeyError:
        raise ValueError(f"data_format must be NCHW or NHWC, got {data_format!r}") from None


def build(name, num_classes=None, data_format="NHWC", image_size=None):
    """Builds a fresh keras.Model for a registered name."""
    spec = get_spec(name)
    image_size = image_size or spec.default_image_size
    if image_size < spec.min_image_size:
        raise ValueError(f"model {name!r} needs images of at least "
                         f"{spec.min_image_size}x{spec.min_image_size}, got {image_size}")
    if num_classes is None:
        num_classes = DATASET_CLASSES[spec.default_dataset]
    return spec.builder(num_classes=num_classes,
                        data_format=keras_data_format(data_format),
                        image_size=image_size)


def input_shape(image_size, data_format, channels=3):
    """Per-example image shape for a Keras data_format or NCHW/NHWC."""
    if keras_data_format(data_format) == "channels_first":
        return (channels, image_size, image_size)
    return (image_size, image_size, channels)


def decays_by_default(variable):
    """Conv and dense kernels decay; BN gamma/beta, biases and moving stats do not."""
    return variable.trainable and len(variable.shape) >= 2


def weight_decay_mask(model, name=None):
    """One bool per `model.trainable_variables`: does L2 decay apply to it?

    `name` is the registered model name, whose weight_decay_filter (if any)
    replaces the default rule. Aligned with trainable_variables so an engine
    that calls the model statelessly can pick the matching values.
    """
    rule = decays_by_default
    if name is not None and get_spec(name).weight_decay_filter is not None:
        rule = get_spec(name).weight_decay_filter
    return [bool(rule(v)) for v in model.trainable_variables]


def weight_decay_variables(model, name=None):
    """The model's variables that get L2 weight decay (see weight_decay_mask)."""
    return [v for v, decays in zip(model.trainable_variables, weight_decay_mask(model, name))
            if decays]
