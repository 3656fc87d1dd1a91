"""A small, learnable data set written in the CIFAR-10 binary layout.

Each class has its own colour; an image is that colour plus noise, so a tiny
model separates the classes through per-image standardization, random crops
and flips alike.
"""
import os

import numpy as np

RECORD_BYTES = 1 + 32 * 32 * 3


def learnable_examples(count, seed):
    """(uint8 images NHWC, uint8 labels) of `count` examples."""
    rng = np.random.default_rng(seed)
    palette = np.random.default_rng(1234).integers(0, 256, (10, 3))
    labels = rng.integers(0, 10, count).astype(np.uint8)
    noise = rng.normal(0, 20, (count, 32, 32, 3))
    images = np.clip(palette[labels][:, None, None, :] + noise, 0, 255).astype(np.uint8)
    return images, labels


def write_records(path, images, labels):
    """One file of records: the label byte, then the image channel-major (CHW)."""
    chw = images.transpose(0, 3, 1, 2).reshape(len(images), -1)
    np.concatenate([labels[:, None], chw], axis=1).astype(np.uint8).tofile(path)


def write_dataset(data_dir, num_train, num_test, seed=0, train_files=1):
    """data_batch_1..k.bin (train) and test_batch.bin under data_dir."""
    os.makedirs(data_dir, exist_ok=True)
    images, labels = learnable_examples(num_train, seed)
    for i, part in enumerate(np.array_split(np.arange(num_train), train_files)):
        write_records(os.path.join(data_dir, f"data_batch_{i + 1}.bin"), images[part],
                      labels[part])
    test_images, test_labels = learnable_examples(num_test, seed + 1)
    write_records(os.path.join(data_dir, "test_batch.bin"), test_images, test_labels)
    return data_dir


def read_test_split(data_dir):
    """(standardized float32 NHWC images, int labels) of test_batch.bin, decoded
    with numpy alone: the independent reference for eval."""
    raw = np.fromfile(os.path.join(data_dir, "test_batch.bin"), np.uint8)
    raw = raw.reshape(-1, RECORD_BYTES)
    labels = raw[:, 0].astype(np.int64)
    images = raw[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).astype(np.float64)
    mean = images.mean(axis=(1, 2, 3), keepdims=True)
    std = images.std(axis=(1, 2, 3), keepdims=True)
    # tf.image.per_image_standardization's rule: std at least 1/sqrt(pixels).
    std = np.maximum(std, 1.0 / np.sqrt(images[0].size))
    return ((images - mean) / std).astype(np.float32), labels
