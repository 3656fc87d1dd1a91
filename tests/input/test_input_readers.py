"""CIFAR-10 binary and ImageNet TFRecord readers on small files written here."""
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, ParamsError, Trainer
from towertrain.input_pipeline import cifar10, imagenet
from towertrain.input_pipeline.arrays import InputError

from helpers.data_files import example, imagenet_dir, solid, write_cifar  # noqa: F401 - a fixture


@pytest.fixture
def cifar_dir(tmp_path):
    write_cifar(tmp_path / "data_batch_1.bin", np.arange(12) % 10, seed=1)
    write_cifar(tmp_path / "data_batch_2.bin", np.arange(8) % 10, seed=2)
    images = write_cifar(tmp_path / "test_batch.bin", [3, 7, 1, 9, 0], seed=3)
    return tmp_path, images


def test_cifar_decode_known_pixel_and_label(cifar_dir):
    data_dir, eval_images = cifar_dir
    raw = open(data_dir / "test_batch.bin", "rb").read()[:cifar10.RECORD_BYTES]
    image, label = cifar10.decode(tf.constant(raw))
    assert int(label) == 3
    # Record bytes are CHW; the decoded image is HWC.
    assert int(image[5, 7, 2]) == eval_images[0, 2, 5, 7]
    np.testing.assert_array_equal(image.numpy(), eval_images[0].transpose(1, 2, 0))


@pytest.mark.parametrize("data_format,shape", [("NHWC", (32, 32, 3)), ("NCHW", (3, 32, 32))])
def test_cifar_train_augmentation_shapes_and_epoch(cifar_dir, data_format, shape):
    source = cifar10.dataset_input(str(cifar_dir[0]), global_batch=8, num_epochs=1,
                                   data_format=data_format)
    assert source.num_examples == 20 and source.steps_per_epoch == 3
    batches = list(source.dataset)
    assert [b[0].shape for b in batches] == [(8,) + shape, (8,) + shape, (4,) + shape]
    images = np.concatenate([b[0].numpy() for b in batches])
    axes = (1, 2, 3)
    np.testing.assert_allclose(images.mean(axis=axes), 0, atol=1e-4)  # standardized
    assert sorted(np.concatenate([b[1] for b in batches]).tolist()) == sorted(
        [i % 10 for i in range(12)] + list(range(8)))


def test_cifar_eval_is_deterministic(cifar_dir):
    def run():
        source = cifar10.dataset_input(str(cifar_dir[0]), global_batch=2, train=False,
                                       num_epochs=1)
        return [(i.numpy(), l.numpy()) for i, l in source.dataset]
    first, second = run(), run()
    assert [l.tolist() for _, l in first] == [[3, 7], [1, 9], [0]]
    for (a, _), (b, _) in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_cifar_train_is_deterministic_per_seed(cifar_dir):
    def run(seed):
        source = cifar10.dataset_input(str(cifar_dir[0]), global_batch=20, num_epochs=1,
                                       seed=seed)
        return next(iter(source.dataset))[0].numpy()
    np.testing.assert_array_equal(run(5), run(5))
    assert not np.array_equal(run(5), run(6))


def test_cifar_bad_inputs(tmp_path):
    with pytest.raises(ParamsError, match="--data_dir=.*no such directory"):
        Params(data_dir=str(tmp_path / "missing"))
    with pytest.raises(InputError, match="no CIFAR-10 binary files"):
        cifar10.find_files(str(tmp_path))
    (tmp_path / "data_batch_1").write_bytes(b"\x80\x04 not unpickled")
    with pytest.raises(InputError, match="pickle.*never unpickles"):
        cifar10.find_files(str(tmp_path))
    truncated = tmp_path / "data_batch_1.bin"
    write_cifar(truncated, [1, 2])
    truncated.write_bytes(truncated.read_bytes()[:-100])
    with pytest.raises(InputError, match="data_batch_1.bin.*not a whole number"):
        cifar10.dataset_input(str(tmp_path), 4)
    write_cifar(truncated, [1, 12, 2])
    with pytest.raises(InputError, match="data_batch_1.bin: record 1 has label 12"):
        cifar10.dataset_input(str(tmp_path), 4)


def test_cli_truncated_cifar_exits_nonzero_naming_the_file(tmp_path):
    path = tmp_path / "data_batch_1.bin"
    write_cifar(path, [1, 2])
    path.write_bytes(path.read_bytes()[:-1])
    proc = subprocess.run(
        [sys.executable, "-m", "towertrain", f"--data_dir={tmp_path}", "--data_name=cifar10",
         "--device=cpu", "--num_batches=1", "--num_warmup_batches=0"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "data_batch_1.bin" in proc.stderr


def test_trainer_on_cifar_files_nchw_two_devices(cifar_dir):
    params = Params(model="trivial", data_dir=str(cifar_dir[0]), data_name="cifar10",
                    device="cpu", num_gpus=2, batch_size=4, data_format="NCHW",
                    num_epochs=2, num_warmup_batches=1, display_every=100,
                    tf_random_seed=0)  # a graph seed of 0 once broke the epoch shuffle
    trainer = Trainer(params)
    assert trainer.num_warmup_batches + trainer.num_batches == 2 * 3  # ceil(20 / 8) * 2
    result = trainer.train(write=lambda line: None)
    assert np.isfinite(result.final_loss)


# ImageNet TFRecords ---------------------------------------------------------

def test_imagenet_eval_decodes_known_color_and_label(imagenet_dir):
    source = imagenet.dataset_input(str(imagenet_dir), global_batch=2, image_size=24,
                                    num_classes=4, train=False, num_epochs=1)
    assert source.num_examples == 2
    images, labels = next(iter(source.dataset))
    assert images.shape == (2, 24, 24, 3)
    assert labels.numpy().tolist() == [2, 3]  # stored 1-based, offset 1
    expected = np.array([200, 40, 100]) / 127.5 - 1
    np.testing.assert_allclose(images[0].numpy().mean(axis=(0, 1)), expected, atol=0.03)
    again, _ = next(iter(imagenet.dataset_input(
        str(imagenet_dir), global_batch=2, image_size=24, num_classes=4, train=False,
        num_epochs=1).dataset))
    np.testing.assert_array_equal(images.numpy(), again.numpy())


def test_imagenet_train_shapes_and_count(imagenet_dir):
    source = imagenet.dataset_input(str(imagenet_dir), global_batch=4, image_size=16,
                                    num_classes=4, num_epochs=1, data_format="NCHW")
    assert source.num_examples == 10 and source.steps_per_epoch == 3
    batches = list(source.dataset)
    assert [tuple(b[0].shape) for b in batches] == [(4, 3, 16, 16)] * 2 + [(2, 3, 16, 16)]
    assert all(np.all(np.abs(b[0].numpy()) <= 1.0) for b in batches)


def test_imagenet_bad_inputs(imagenet_dir, tmp_path_factory):
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(InputError, match="no ImageNet TFRecord shards"):
        imagenet.find_files(str(empty))
    shard = imagenet_dir / "train-00001-of-00002"
    data = shard.read_bytes()
    shard.write_bytes(data[:-7])
    with pytest.raises(InputError, match="train-00001-of-00002: truncated"):
        imagenet.dataset_input(str(imagenet_dir), 4, image_size=16)
    shard.write_bytes(b"\x13" + data[1:])
    with pytest.raises(InputError, match="train-00001-of-00002: corrupt"):
        imagenet.dataset_input(str(imagenet_dir), 4, image_size=16)
    shard.write_bytes(data)
    # Labels stored 1..4 are out of range for a 3-class model: the shard is named.
    source = imagenet.dataset_input(str(imagenet_dir), 10, image_size=16, num_classes=3,
                                    num_epochs=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="label out of range.*train-0"):
        list(source.dataset)


@pytest.mark.parametrize("staging_depth", [0, 1])
def test_imagenet_payload_corruption_fails_step_naming_data_dir(imagenet_dir, staging_depth):
    shard = imagenet_dir / "validation-00000-of-00001"
    shard.unlink()
    path = imagenet_dir / "train-00000-of-00002"
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF  # inside the first payload: frames intact, data CRC wrong
    path.write_bytes(bytes(data))
    params = Params(model="trivial", data_dir=str(imagenet_dir), data_name="imagenet",
                    device="cpu", num_gpus=1, batch_size=10, num_epochs=1,
                    num_warmup_batches=0, staging_depth=staging_depth)
    with pytest.raises(InputError, match="--data_dir=.*corrupt"):
        Trainer(params).step()  # staged: the priming read fails, else the step's


def _batches(iterator, count):
    return [(images.numpy(), labels.numpy()) for _, (images, labels) in
            zip(range(count), iterator)]


def _assert_resume_exact_at_every_batch(make_dataset, count, tmp_path):
    """Saving the iterator after any batch k (epoch ends included) and restoring
    it into a freshly built pipeline yields exactly batches k+1.. of a straight
    pass: the shuffle order and the augmentation of later epochs do not depend
    on where the run was interrupted."""
    straight = _batches(iter(make_dataset()), count)
    for cut in range(1, count):
        first = iter(make_dataset())
        _batches(first, cut)
        path = tf.train.Checkpoint(input=first).write(str(tmp_path / f"cut{cut}"))
        resumed = iter(make_dataset())
        tf.train.Checkpoint(input=resumed).read(path).assert_consumed()
        for step, ((images, labels), (want_images, want_labels)) in enumerate(
                zip(_batches(resumed, count - cut), straight[cut:]), cut + 1):
            np.testing.assert_array_equal(labels, want_labels, err_msg=f"cut {cut} step {step}")
            np.testing.assert_array_equal(images, want_images, err_msg=f"cut {cut} step {step}")
    # The epochs really are shuffled and augmented differently.
    assert not np.array_equal(straight[0][0], straight[count // 2][0])


def test_cifar_train_resumes_exactly_across_epoch_ends(cifar_dir, tmp_path):
    # 20 examples, batch 8: epochs end after batches 3, 6, 9.
    _assert_resume_exact_at_every_batch(
        lambda: cifar10.dataset_input(str(cifar_dir[0]), global_batch=8, seed=4).dataset,
        9, tmp_path)


def test_imagenet_train_resumes_exactly_across_epoch_ends(imagenet_dir, tmp_path):
    _assert_resume_exact_at_every_batch(
        lambda: imagenet.dataset_input(str(imagenet_dir), global_batch=4, image_size=16,
                                       num_classes=4, seed=4).dataset, 7, tmp_path)


def test_shuffled_arrays_resume_exactly_across_epoch_ends(tmp_path):
    from towertrain.input_pipeline import from_arrays
    images = np.arange(10 * 2, dtype=np.float32).reshape(10, 2, 1, 1)
    labels = np.arange(10, dtype=np.int32)
    for num_epochs in (None, 3):  # batches across epoch ends, and per-epoch batches
        _assert_resume_exact_at_every_batch(
            lambda: from_arrays(images, labels, 4, shuffle=True, seed=4,
                                num_epochs=num_epochs).dataset, 7, tmp_path)


@pytest.mark.parametrize("reader", ["cifar", "imagenet", "arrays"])
def test_shuffled_order_is_set_by_the_input_seed_alone_even_under_graph_seed_0(
        reader, cifar_dir, imagenet_dir):
    """tf.random.set_seed(0) (what --tf_random_seed=0 does) must neither break
    the per-epoch shuffle nor change its order: only the input's own seed does."""
    from towertrain.input_pipeline import from_arrays
    images = np.arange(10 * 2, dtype=np.float32).reshape(10, 2, 1, 1)
    build = {
        "cifar": lambda: cifar10.dataset_input(str(cifar_dir[0]), global_batch=8, seed=4),
        "imagenet": lambda: imagenet.dataset_input(str(imagenet_dir), global_batch=4,
                                                   image_size=16, num_classes=4, seed=4),
        "arrays": lambda: from_arrays(images, np.arange(10), 4, shuffle=True, seed=4,
                                      num_epochs=3),
    }[reader]
    orders = {}
    try:
        for graph_seed in (0, 1234):
            tf.random.set_seed(graph_seed)
            orders[graph_seed] = [labels.numpy().tolist()
                                  for _, labels in build().dataset.take(6)]
    finally:
        tf.random.set_seed(None)
    assert orders[0] == orders[1234]
    assert len({tuple(batch) for batch in orders[0]}) > 1


def _shard(path, records):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)


def test_imagenet_labels_and_images_are_checked_up_front_and_named_later(tmp_path):
    """Label 0 (a 0-based export) or a PNG: a 15-line TensorFlow dump mid
    warm-up. Now a sample is read before training, naming shard and record;
    one met later stops the step with one line naming the shard."""
    image = solid((20, 100, 200))
    png = tf.train.Example.FromString(example(image, 2))
    png.features.feature["image/encoded"].bytes_list.value[0] = tf.io.encode_png(image).numpy()
    shard = tmp_path / "train-00000-of-00001"
    _shard(shard, [example(image, 0)] + [example(image, 1)] * 3)
    with pytest.raises(InputError) as failed:
        imagenet.dataset_input(str(tmp_path), 2, image_size=16, num_classes=4)
    assert str(failed.value) == (
        f"record 0 of {shard}: label 0 is outside 1..4: towertrain reads ImageNet labels "
        "1-based (1..1000 in the standard layout, shifted to 0..3); fix the shard's labels "
        "(a 0-based export: add 1 to every label)")
    _shard(shard, [example(image, 1), png.SerializeToString()])
    with pytest.raises(InputError) as failed:
        imagenet.dataset_input(str(tmp_path), 2, image_size=16, num_classes=4)
    assert str(failed.value).startswith(
        f"record 1 of {shard}: image/encoded is not a decodable JPEG (not a JPEG); re-encode")
    # Past the sample: the step stops with one line naming the shard.
    _shard(shard, [example(image, 1)] * imagenet.SAMPLE_PER_SHARD + [example(image, 0)] * 2)
    params = Params(model="trivial", data_dir=str(tmp_path), data_name="imagenet",
                    device="cpu", num_gpus=1, batch_size=4, num_batches=1,
                    num_warmup_batches=0, staging_depth=0)
    trainer = Trainer(params)
    try:
        with pytest.raises(InputError) as failed:
            trainer.step()
    finally:
        trainer.close()
    assert str(failed.value) == (
        f"{shard}: label 0 is outside 1..1000: towertrain reads ImageNet labels 1-based "
        "(1..1000 in the standard layout, shifted to 0..999); fix the shard's labels (a "
        "0-based export: add 1 to every label)")
