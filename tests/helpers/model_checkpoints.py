"""A trained-looking train_dir for any registered model: its variables perturbed
off their initial values, the run record written, and its logits on fixed images."""
import os

import numpy as np
import tensorflow as tf

from towertrain import models
from towertrain.state import checkpoint as ckpt_lib

NUM_CLASSES = 10


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
    ckpt_lib.write_run_info(train_dir, {
        "model": name, "data_name": spec.default_dataset, "num_classes": NUM_CLASSES,
        "data_format": "NHWC", "input_shape": [size, size, 3]})
    images = rng.uniform(0.0, 1.0, (2, size, size, 3)).astype(np.float32)
    return images, np.asarray(model(images, training=False))

