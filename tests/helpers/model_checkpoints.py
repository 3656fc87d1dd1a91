"""A trained-looking train_dir for any registered model: its variables perturbed
off their initial values, the run record written, and its logits on fixed images.

Also which models the default suite runs in place of their copies (REPRESENTED_BY).
"""
import os

import numpy as np
import tensorflow as tf

from towertrain import models
from towertrain.state import checkpoint as ckpt_lib
from towertrain.state import run_record

NUM_CLASSES = 10

# Models that repeat a builder's code with more blocks (or, resnet50_v1.5, one
# stride moved), each with the model the default suite runs in its place. Their
# structure is pinned by parameter counts (and v1.5's stride by its own test) in
# tests/models/test_models.py, so the per-model sweeps (both formats, one
# training step, export) run them only with TOWERTRAIN_FULL_SWEEP=1. Any model
# not named here (a new one included) runs in the default suite.
REPRESENTED_BY = {
    **{f"resnet{depth}{v}": f"resnet20{v}" for depth in (32, 44, 56, 110) for v in ("", "_v2")},
    "resnet50_v1.5": "resnet50", "resnet101": "resnet50", "resnet152": "resnet50",
    "vgg16": "vgg11", "vgg19": "vgg11"}
from helpers.sweep import FULL_SWEEP, full_sweep_only  # noqa: F401 - re-exported


def copy_mark(name):
    """full_sweep_only for a model in REPRESENTED_BY."""
    return full_sweep_only(f"repeats {REPRESENTED_BY[name]}'s builder")


def _perturb(variables, rng):
    """Moves every float variable off its initial value, variances staying positive."""
    for variable in variables.values():
        if "float" not in str(variable.dtype):
            continue  # seed-generator states
        shape = variable.shape
        value = variable.value.numpy() * rng.uniform(0.8, 1.2, shape)
        if len(shape) == 1:  # biases, gamma/beta, moving mean/variance (>= 0.75)
            value = value + rng.uniform(-0.05, 0.05, shape)
        variable.assign(value.astype(str(variable.dtype)))


def write_checkpoint(name, train_dir, rng):
    """A trained-looking train_dir for `name` and the engine model's logits on fixed images."""
    spec = models.get_spec(name)
    # At least 8x8 so convs use more than their centre tap; flatten-based models
    # (lenet, alexnet, vgg) stay at their minimum, where their dense layers are smallest.
    size = max(spec.min_image_size, 8)
    model = models.build(name, num_classes=NUM_CLASSES, data_format="NHWC", image_size=size)
    variables = ckpt_lib.model_variable_dict(model)
    _perturb(variables, rng)
    tf.train.Checkpoint(model=variables).save(os.path.join(train_dir, "ckpt"))
    run_record.write(train_dir, {
        "model": name, "data_name": spec.default_dataset, "num_classes": NUM_CLASSES,
        "data_format": "NHWC", "input_shape": [size, size, 3]})
    images = rng.uniform(0.0, 1.0, (2, size, size, 3)).astype(np.float32)
    return images, np.asarray(model(images, training=False))

