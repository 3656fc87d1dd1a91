"""Training augmentation proven by its statistics (docs/data.md, Input).

CIFAR-10 training: pad 4, random 32x32 crop, random flip, per-image
standardization. Every training image here is matched exactly to one of the
162 (crop offset, flip) candidates computed with numpy from the raw record;
the offsets and flips must vary across examples and across epochs. Eval is
exactly the standardization of the raw image, the same every time.

ImageNet training: a distorted crop (bbox-aware), resize, flip. The test
images are colour gradients (red grows with the column, green with the row),
so each output tells which window of the photo it shows and whether it was
mirrored; windows and flips must vary across examples and epochs and differ
from eval's fixed 87.5% central crop, which is checked against a reference.
"""
import numpy as np
import pytest
import tensorflow as tf

from towertrain.input_pipeline import cifar10, imagenet

CIFAR_EXAMPLES = 10  # labels 0..9, one per example: the label names the example
EPOCHS = 3


# CIFAR-10 ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cifar_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cifar")
    rng = np.random.default_rng(5)
    chw = rng.integers(0, 256, (CIFAR_EXAMPLES, 3, 32, 32), dtype=np.uint8)
    labels = np.arange(CIFAR_EXAMPLES, dtype=np.uint8)
    records = np.concatenate([labels[:, None], chw.reshape(CIFAR_EXAMPLES, -1)], axis=1)
    for name in ("data_batch_1.bin", "test_batch.bin"):
        records.tofile(directory / name)
    return str(directory), chw.transpose(0, 2, 3, 1)  # HWC


def standardize(images):
    """tf.image.per_image_standardization in numpy, over the last three axes."""
    images = images.astype(np.float64)
    mean = images.mean(axis=(-3, -2, -1), keepdims=True)
    std = images.std(axis=(-3, -2, -1), keepdims=True)
    return (images - mean) / np.maximum(std, 1.0 / np.sqrt(np.prod(images.shape[-3:])))


def cifar_candidates(raw):
    """{(dy, dx, flipped): standardized image} for every pad-4 crop and flip."""
    padded = np.pad(raw, [(4, 4), (4, 4), (0, 0)])
    keys, crops = [], []
    for dy in range(9):
        for dx in range(9):
            crop = padded[dy:dy + 32, dx:dx + 32]
            for flipped in (False, True):
                keys.append((dy, dx, flipped))
                crops.append(crop[:, ::-1] if flipped else crop)
    return keys, standardize(np.stack(crops))


def identify(image, keys, candidates):
    errors = np.abs(candidates - image[None].astype(np.float64)).max(axis=(1, 2, 3))
    order = np.argsort(errors)
    assert errors[order[0]] < 1e-4, f"no crop/flip of the raw image gives it ({errors.min()})"
    assert errors[order[1]] > 1e-2, "ambiguous match"
    return keys[order[0]]


def cifar_epochs(data_dir, train, seed=0):
    source = cifar10.dataset_input(data_dir, global_batch=CIFAR_EXAMPLES, train=train,
                                   num_epochs=EPOCHS if train else 1, seed=seed)
    return [(images.numpy(), labels.numpy()) for images, labels in source.dataset]


def test_cifar_training_crops_and_flips_vary_across_examples_and_epochs(cifar_dir):
    data_dir, raw = cifar_dir
    candidates = [cifar_candidates(raw[i]) for i in range(CIFAR_EXAMPLES)]
    epochs = cifar_epochs(data_dir, train=True)
    assert len(epochs) == EPOCHS
    chosen = []  # per epoch: {example: (dy, dx, flipped)}
    for images, labels in epochs:
        assert sorted(labels.tolist()) == list(range(CIFAR_EXAMPLES))
        chosen.append({int(label): identify(image, *candidates[int(label)])
                       for image, label in zip(images, labels)})
    for per_example in chosen:  # within an epoch, across examples
        offsets = {key[:2] for key in per_example.values()}
        flips = [key[2] for key in per_example.values()]
        assert len(offsets) >= 5, f"crops hardly vary: {sorted(offsets)}"
        assert 0 < sum(flips) < len(flips), f"flips: {flips}"
    for a, b in zip(chosen, chosen[1:]):  # across epochs, per example
        changed = sum(a[i] != b[i] for i in range(CIFAR_EXAMPLES))
        assert changed >= CIFAR_EXAMPLES - 2, f"only {changed} examples changed: {a} {b}"
    # Each example is seen with more than one flip over the epochs somewhere.
    assert any(len({c[i][2] for c in chosen}) == 2 for i in range(CIFAR_EXAMPLES))


def test_cifar_eval_is_the_standardized_raw_image_every_time(cifar_dir):
    data_dir, raw = cifar_dir
    first, second = cifar_epochs(data_dir, train=False), cifar_epochs(data_dir, train=False)
    (images, labels), = first
    assert labels.tolist() == list(range(CIFAR_EXAMPLES))  # file order
    np.testing.assert_allclose(images, standardize(raw), atol=1e-5)
    np.testing.assert_array_equal(images, second[0][0])


# ImageNet ------------------------------------------------------------------------

HEIGHT, WIDTH = 48, 64  # multiples of 16: the 87.5% central crop is exact
IMAGENET_EXAMPLES = 8
SIZE = 16


def gradient_image():
    rows, cols = np.meshgrid(np.arange(HEIGHT), np.arange(WIDTH), indexing="ij")
    return np.stack([40 + 2.5 * cols, 40 + 3.0 * rows, np.full(rows.shape, 128.0)],
                    axis=-1).round().astype(np.uint8)


def imagenet_example(encoded, label, bbox):
    feature = {
        "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[encoded])),
        "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
    }
    for i, key in enumerate(("ymin", "xmin", "ymax", "xmax")):
        feature[f"image/object/bbox/{key}"] = tf.train.Feature(
            float_list=tf.train.FloatList(value=[] if bbox is None else [bbox[i]]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


@pytest.fixture(scope="module")
def imagenet_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("imagenet")
    encoded = tf.io.encode_jpeg(tf.constant(gradient_image()), quality=100).numpy()
    for name in ("train-00000-of-00001", "validation-00000-of-00001"):
        with tf.io.TFRecordWriter(str(directory / name)) as writer:
            for i in range(IMAGENET_EXAMPLES):
                bbox = (0.2, 0.1, 0.9, 0.7) if i % 2 else None
                writer.write(imagenet_example(encoded, i + 1, bbox))
    return str(directory), encoded


def window(image):
    """(center x, width, center y, height, mirrored) of the photo region an output
    shows, in source pixels, read off the red (column) and green (row) gradients."""
    pixels = (image.astype(np.float64) + 1.0) * 127.5
    red = pixels[..., 0].mean(axis=0)  # one value per output column
    green = pixels[..., 1].mean(axis=1)  # one value per output row
    slope_x = np.polyfit(np.arange(SIZE), red, 1)[0] / 2.5
    slope_y = np.polyfit(np.arange(SIZE), green, 1)[0] / 3.0
    return ((red.mean() - 40) / 2.5, abs(slope_x) * SIZE, (green.mean() - 40) / 3.0,
            slope_y * SIZE, slope_x < 0)


def same_window(a, b, tolerance=1.5):
    return a[4] == b[4] and all(abs(x - y) <= tolerance for x, y in zip(a[:4], b[:4]))


def imagenet_batches(data_dir, train):
    source = imagenet.dataset_input(data_dir, global_batch=IMAGENET_EXAMPLES, image_size=SIZE,
                                    num_classes=IMAGENET_EXAMPLES, train=train,
                                    num_epochs=EPOCHS if train else 1, seed=0)
    return [(images.numpy(), labels.numpy()) for images, labels in source.dataset]


def test_imagenet_eval_is_the_central_crop_resized(imagenet_dir):
    data_dir, encoded = imagenet_dir
    (images, labels), = imagenet_batches(data_dir, train=False)
    assert labels.tolist() == list(range(IMAGENET_EXAMPLES))
    decoded = tf.io.decode_jpeg(encoded, channels=3)
    top, left = HEIGHT // 16, WIDTH // 16  # (1 - 0.875) / 2 of each side
    crop = decoded[top:HEIGHT - top, left:WIDTH - left]
    expected = tf.clip_by_value(tf.image.resize(crop, [SIZE, SIZE]), 0, 255) / 127.5 - 1
    for image in images:
        np.testing.assert_allclose(image, expected.numpy(), atol=1e-5)
    eval_window = window(images[0])
    assert not eval_window[4]
    np.testing.assert_allclose(eval_window[:4], [WIDTH / 2 - 0.5, WIDTH - 2 * left,
                                                 HEIGHT / 2 - 0.5, HEIGHT - 2 * top], atol=1.5)
    (again, _), = imagenet_batches(data_dir, train=False)
    np.testing.assert_array_equal(images, again)


def test_imagenet_training_windows_and_flips_vary_across_examples_and_epochs(imagenet_dir):
    data_dir, _ = imagenet_dir
    (eval_images, _), = imagenet_batches(data_dir, train=False)
    eval_window = window(eval_images[0])
    epochs = imagenet_batches(data_dir, train=True)
    assert len(epochs) == EPOCHS
    seen = []  # per epoch: {example: window}
    for images, labels in epochs:
        assert sorted(labels.tolist()) == list(range(IMAGENET_EXAMPLES))
        assert np.all(np.abs(images) <= 1.0)
        seen.append({int(label): window(image) for image, label in zip(images, labels)})
    everything = [w for per_epoch in seen for w in per_epoch.values()]
    mirrored = sum(w[4] for w in everything)
    assert 0 < mirrored < len(everything), f"{mirrored} of {len(everything)} mirrored"
    like_eval = sum(same_window(w, eval_window) for w in everything)
    assert like_eval <= 2, f"{like_eval} training images look like eval's central crop"
    for per_epoch in seen:  # across examples (the photos are identical)
        windows = list(per_epoch.values())
        distinct = sum(not any(same_window(w, v) for v in windows[:i])
                       for i, w in enumerate(windows))
        assert distinct >= IMAGENET_EXAMPLES - 2, f"{distinct} distinct windows: {windows}"
    for a, b in zip(seen, seen[1:]):  # across epochs, per example
        changed = sum(not same_window(a[i], b[i]) for i in range(IMAGENET_EXAMPLES))
        assert changed >= IMAGENET_EXAMPLES - 2
