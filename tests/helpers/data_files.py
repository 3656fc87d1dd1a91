"""Small CIFAR-10 binary and ImageNet TFRecord files for reader tests."""
import numpy as np
import pytest
import tensorflow as tf


def write_cifar(path, labels, seed=0):
    rng = np.random.RandomState(seed)
    images = rng.randint(0, 256, (len(labels), 3, 32, 32)).astype(np.uint8)
    records = np.concatenate([np.asarray(labels, np.uint8)[:, None],
                              images.reshape(len(labels), -1)], axis=1)
    records.tofile(path)
    return images


def example(image, label, bbox=None):
    feature = {
        "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[tf.io.encode_jpeg(image, quality=100).numpy()])),
        "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
    }
    for i, key in enumerate(("ymin", "xmin", "ymax", "xmax")):
        values = [] if bbox is None else [bbox[i]]
        feature[f"image/object/bbox/{key}"] = tf.train.Feature(
            float_list=tf.train.FloatList(value=values))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def solid(color, height=40, width=52):
    return tf.constant(np.tile(np.array(color, np.uint8), (height, width, 1)))


@pytest.fixture
def imagenet_dir(tmp_path):
    for shard in range(2):
        with tf.io.TFRecordWriter(str(tmp_path / f"train-{shard:05d}-of-00002")) as w:
            for i in range(5):
                bbox = (0.1, 0.2, 0.9, 0.8) if i % 2 else None
                w.write(example(solid((20 * i, 100, 200)), 1 + (i + shard) % 4, bbox))
    with tf.io.TFRecordWriter(str(tmp_path / "validation-00000-of-00001")) as w:
        w.write(example(solid((200, 40, 100)), 3))
        w.write(example(solid((10, 250, 60)), 4))
    return tmp_path
