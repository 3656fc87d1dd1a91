"""The library questions what it is given: raw uint8
pixels to from_arrays (a loss of ~1,500 without a word) are refused naming
the dtype, the range and what to do."""
import numpy as np
import pytest

from towertrain.input_pipeline import InputError, from_arrays


def test_uint8_images_are_refused_with_dtype_range_and_what_to_do():
    images = np.zeros((8, 4, 4, 3), np.uint8)
    images[0, 0, 0, 0] = 255
    with pytest.raises(InputError) as raised:
        from_arrays(images, np.zeros(8, np.int32), 4)
    assert str(raised.value) == (
        "from_arrays: images are uint8 with values 0..255 (raw pixels); the models train on "
        "float images of a small range: pass images.astype('float32') / 255 (or standardize "
        "each image, as the CIFAR-10 reader does)")
    from_arrays(images.astype(np.float32) / 255, np.zeros(8, np.int32), 4)  # the way out

