"""What from_arrays refuses before it builds anything: raw integer pixels
(uint8 0..255 trained to a loss of ~1,500 without a word) and NaN or Inf
values (the first step diverged, blamed on the learning rate)."""
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


def check_finite(images, labels):
    """Raises InputError naming the array, how many values are NaN or Inf and
    the first example holding one."""
    for what, values in (("images", images), ("labels", labels)):
        values = np.asarray(values)
        if not np.issubdtype(values.dtype, np.floating) or not values.size:
            continue
        bad = ~np.isfinite(values.reshape(len(values), -1) if values.ndim else values)
        if bad.any():
            rows = np.flatnonzero(bad.any(axis=1)) if bad.ndim > 1 else np.flatnonzero(bad)
            raise InputError(
                f"from_arrays: {what} hold {int(bad.sum()):,} NaN or Inf value(s), in "
                f"{len(rows):,} example(s) (the first: example {int(rows[0])}); every step "
                "that trains on one would diverge: drop or repair those examples "
                f"(numpy: keep = np.isfinite({what}).reshape(len({what}), -1).all(axis=1))")
