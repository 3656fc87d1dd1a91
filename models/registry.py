"""Model registry: names -> Keras model builders plus their defaults.

A builder is `builder(num_classes, data_format, image_size) -> keras.Model`
taking images in `data_format` ('channels_first' or 'channels_last') and
returning logits of shape (batch, num_classes).
"""
import dataclasses
from typing import Callable

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


_REGISTRY = {}


def register_model(name, builder, default_image_size, default_batch_size,
                   default_learning_rate=0.1, default_dataset="imagenet",
                   overwrite=False):
    """Makes `--model=name` available. Raises ValueError on a duplicate name."""
    if name in _REGISTRY and not overwrite:
        raise ValueError(f"model {name!r} is already registered; pass overwrite=True "
                         "to replace it")
    if default_dataset not in DATASET_CLASSES:
        raise ValueError(f"default_dataset must be one of {sorted(DATASET_CLASSES)}")
    _REGISTRY[name] = ModelSpec(name, builder, default_image_size, default_batch_size,
                                default_learning_rate, default_dataset)


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
    if num_classes is None:
        num_classes = DATASET_CLASSES[spec.default_dataset]
    return spec.builder(num_classes=num_classes,
                        data_format=keras_data_format(data_format),
                        image_size=image_size or spec.default_image_size)


def input_shape(image_size, data_format, channels=3):
    """Per-example image shape for a Keras data_format or NCHW/NHWC."""
    if keras_data_format(data_format) == "channels_first":
        return (channels, image_size, image_size)
    return (image_size, image_size, channels)
