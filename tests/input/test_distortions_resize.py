"""--distortions and --resize_method (docs/data.md, Input), through the input a run's
Params build (towertrain.engine.feed.input_factory), on files written here."""
import os

import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params

from helpers import cifar_files, plans
from helpers.data_files import example, imagenet_dir  # noqa: F401 - a fixture

SIZE = 16


def batches(params, image_shape, num_classes, global_batch, name, eval_split=False):
    source = plans.make_input(params, image_shape=image_shape, num_classes=num_classes,
                              global_batch=global_batch, dataset_name=name)
    if eval_split:
        data = source.eval_data(global_batch)
        return [images.numpy() for images, _ in data.dataset]
    iterator = iter(source.dataset)
    return [next(iterator)[0].numpy() for _ in range(2)]


# CIFAR-10: off (the default, as tf_cnn_benchmarks) = standardization only;
# on = random pad-4 crops and flips.

def test_cifar_distortions_off_by_default_and_on_crop_and_flip(tmp_path):
    data_dir = cifar_files.write_dataset(str(tmp_path), num_train=12, num_test=4)
    raw = np.fromfile(os.path.join(data_dir, "data_batch_1.bin"), np.uint8)
    raw = raw.reshape(12, -1)[:, 1:].reshape(12, 3, 32, 32).transpose(0, 2, 3, 1)
    reference = raw.astype(np.float64)
    mean = reference.mean(axis=(1, 2, 3), keepdims=True)
    std = np.maximum(reference.std(axis=(1, 2, 3), keepdims=True), 1 / np.sqrt(32 * 32 * 3))
    reference = (reference - mean) / std

    def unchanged(distortions):
        params = Params(model="trivial", data_dir=data_dir, data_name="cifar10",
                        distortions=distortions)
        assert Params(model="trivial").distortions is False
        images = np.concatenate(batches(params, (32, 32, 3), 10, 12, "cifar10"))
        errors = np.abs(images[:, None] - reference[None]).max(axis=(2, 3, 4)).min(axis=1)
        return int(np.sum(errors < 1e-4)), len(images)

    same, total = unchanged(False)
    assert same == total == 24  # every image is a raw training image, standardized
    same, total = unchanged(True)
    assert same <= 4, f"{same} of {total} images were neither cropped nor flipped"


# ImageNet: solid-colour photos; crops, resizes and flips keep their colour,
# --distortions changes it (brightness, saturation, hue).

def _colours(images):
    return (images.reshape(len(images), -1, 3).mean(axis=1) + 1) * 127.5


def test_imagenet_distortions_change_the_colours_only_when_on(imagenet_dir):  # noqa: F811
    sources = np.array([(20 * i, 100, 200) for i in range(5)], np.float64)

    def distances(distortions):
        params = Params(model="trivial", data_dir=str(imagenet_dir), data_name="imagenet",
                        distortions=distortions)
        images = np.concatenate(batches(params, (SIZE, SIZE, 3), 5, 10, "imagenet"))
        flat = images.reshape(len(images), -1, 3)
        assert np.all(flat.std(axis=1) < 0.02)  # still one colour per image
        return np.abs(_colours(images)[:, None] - sources[None]).max(axis=2).min(axis=1)

    assert np.all(distances(False) < 3.0)  # JPEG quality 100 of a solid colour
    moved = distances(True)
    assert np.mean(moved > 4.0) >= 0.8, moved


@pytest.fixture
def noise_validation(tmp_path):
    """4 validation photos of random pixels (24 x 20): every method resizes differently."""
    rng = np.random.default_rng(3)
    photos = [rng.integers(0, 256, (24, 20, 3), dtype=np.uint8) for _ in range(4)]
    with tf.io.TFRecordWriter(str(tmp_path / "validation-00000-of-00001")) as writer:
        for i, photo in enumerate(photos):
            writer.write(example(tf.constant(photo), 1 + i))
    with tf.io.TFRecordWriter(str(tmp_path / "train-00000-of-00001")) as writer:
        for i, photo in enumerate(photos):
            writer.write(example(tf.constant(photo), 1 + i))
    decoded = []
    for record in tf.data.TFRecordDataset(str(tmp_path / "validation-00000-of-00001")):
        features = tf.io.parse_single_example(
            record, {"image/encoded": tf.io.FixedLenFeature([], tf.string)})
        decoded.append(tf.io.decode_jpeg(features["image/encoded"], channels=3).numpy())
    return str(tmp_path), decoded


def resized(data_dir, method, eval_split=True):
    params = Params(model="trivial", data_dir=data_dir, data_name="imagenet",
                    resize_method=method)
    return np.concatenate(batches(params, (SIZE, SIZE, 3), 5, 4, "imagenet", eval_split))


def test_resize_method_crop_nearest_and_round_robin_in_eval(noise_validation):
    data_dir, decoded = noise_validation
    crop = resized(data_dir, "crop")
    for image, photo in zip(crop, decoded):  # the central 16 x 16 window, no resize
        window = photo[4:20, 2:18].astype(np.float64) / 127.5 - 1
        np.testing.assert_allclose(image, window, atol=1e-6)
    nearest, bilinear = resized(data_dir, "nearest"), resized(data_dir, "bilinear")
    for i, photo in enumerate(decoded):
        pixels = {tuple(p) for p in photo.reshape(-1, 3)}
        as_bytes = np.rint((nearest[i] + 1) * 127.5).astype(int).reshape(-1, 3)
        assert all(tuple(p) in pixels for p in as_bytes)  # nearest copies pixels
        blended = np.rint((bilinear[i] + 1) * 127.5).astype(int).reshape(-1, 3)
        assert np.mean([tuple(p) not in pixels for p in blended]) > 0.5  # bilinear mixes
    # round_robin: example k is resized with nearest, bilinear, bicubic, area (k mod 4).
    robin = resized(data_dir, "round_robin")
    singles = [nearest, bilinear, resized(data_dir, "bicubic"), resized(data_dir, "area")]
    for k in range(4):
        np.testing.assert_allclose(robin[k], singles[k][k], atol=1e-6)
        assert not np.allclose(singles[k][k], singles[(k + 1) % 4][k], atol=1e-3)


def test_resize_method_crop_trains_on_random_windows_without_resizing(noise_validation):
    data_dir, decoded = noise_validation
    images = resized(data_dir, "crop", eval_split=False)
    windows = []
    for image in images:  # some 16 x 16 window of one photo, maybe mirrored
        as_bytes = np.rint((image + 1) * 127.5)
        found = [(p, dy, dx, flip) for p, photo in enumerate(decoded)
                 for dy in range(24 - SIZE + 1) for dx in range(20 - SIZE + 1)
                 for flip in (False, True)
                 if np.array_equal(as_bytes, (photo[dy:dy + SIZE, dx:dx + SIZE][:, ::-1]
                                              if flip else photo[dy:dy + SIZE, dx:dx + SIZE]))]
        assert len(found) == 1, len(found)
        windows.append(found[0][1:3])
    assert len(set(windows)) > 2  # the windows vary


def test_resize_method_nearest_in_training_copies_pixels_where_bilinear_mixes(
        noise_validation):
    data_dir, decoded = noise_validation
    pixels = {tuple(p) for photo in decoded for p in photo.reshape(-1, 3)}

    def source_share(image):  # the share of the image's pixels found in the photos
        as_bytes = np.rint((image + 1) * 127.5).astype(int).reshape(-1, 3)
        return np.mean([tuple(p) in pixels for p in as_bytes])
    nearest = resized(data_dir, "nearest", eval_split=False)
    bilinear = resized(data_dir, "bilinear", eval_split=False)
    # Training decodes only the crop window, whose pixels next to the window's
    # edge can differ by a step from the full decode: nearest keeps 87-100% of
    # them here, bilinear 0-14%.
    assert min(source_share(image) for image in nearest) > 0.8
    assert max(source_share(image) for image in bilinear) < 0.3


# Asked for where nothing would be resized or distorted: an error, not a no-op.
SYNTHETIC_WHY = ("synthetic data is generated at the model's input size and never resized "
                 "or distorted; drop it, or train on files with --data_dir")


@pytest.mark.parametrize("given,flag", [({"distortions": True}, "--distortions"),
                                        ({"resize_method": "nearest"},
                                         "--resize_method=nearest")])
def test_preprocessing_flags_on_synthetic_data_are_errors(given, flag):
    from towertrain import ParamsError
    with pytest.raises(ParamsError) as err:
        plans.make_input(Params(model="trivial", **given), image_shape=(8, 8, 3),
                         num_classes=10, global_batch=4, dataset_name="cifar10")
    assert str(err.value) == f"{flag}: {SYNTHETIC_WHY}"


def test_resize_method_on_cifar10_files_is_an_error_and_the_cli_exits_2(tmp_path):
    from towertrain import ParamsError
    import helpers.cli
    data_dir = cifar_files.write_dataset(str(tmp_path), num_train=4, num_test=4)
    with pytest.raises(ParamsError) as err:
        batches(Params(model="trivial", data_dir=data_dir, resize_method="area"),
                (32, 32, 3), 10, 4, "cifar10")
    assert str(err.value) == ("--resize_method=area: only applies to imagenet (cifar10 "
                              "images are used as stored, 32x32); drop it")
    done = helpers.cli.run_cli("--model=trivial", "--device=cpu", "--num_batches=1",
                               f"--data_dir={data_dir}", "--data_name=cifar10",
                               "--resize_method=area", timeout=120)
    assert (done.returncode, done.stderr.splitlines()[-1]) == (
        2, f"towertrain: error: {err.value}")
