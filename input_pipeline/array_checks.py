"""What from_arrays refuses before it builds anything:
raw integer pixels (uint8 0..255 trained to a loss of ~1,500 without a word)."""
import numpy as np

from towertrain.errors import InputError


def check(images):
    """Raises InputError naming the images' dtype and range and what to do."""
    images = np.asarray(images)
    if np.issubdtype(images.dtype, np.integer) and images.size:
        raise InputError(
            f"from_arrays: images are {images.dtype} with values {images.min()}..{images.max()}"
            " (raw pixels); the models train on float images of a small range: pass "
            "images.astype('float32') / 255 (or standardize each image, as the CIFAR-10 "
            "reader does)")
