"""CIFAR-10 in its official binary format (cifar-10-batches-bin).

data_batch_1.bin .. data_batch_5.bin (train) and test_batch.bin (eval); each
record is 1 label byte followed by 3072 image bytes, channel-major (CHW).
The python-pickle variant (data_batch_1 without .bin) is refused: unpickling
downloaded files can run arbitrary code.

Every file is checked before training (size a whole number of records, every
label in [0, 10)), so a bad file is reported by name before any step runs.
"""
import os

import numpy as np
import tensorflow as tf

from . import dataset_options, preprocessing
from .arrays import InputError, eval_records, records_input

LABEL_BYTES = 1
IMAGE_BYTES = 32 * 32 * 3
RECORD_BYTES = LABEL_BYTES + IMAGE_BYTES
NUM_CLASSES = 10
TRAIN_FILES = [f"data_batch_{i}.bin" for i in range(1, 6)]
EVAL_FILES = ["test_batch.bin"]
# In cifar-10-binary.tar.gz beside the batches: marks a directory as the
# official download, whose training split is complete.
DOWNLOAD_MARKER = "batches.meta.txt"


def find_files(data_dir, train=True):
    """The split's files present under data_dir (or its cifar-10-batches-bin/)."""
    if not os.path.isdir(data_dir):
        raise InputError(f"--data_dir={data_dir}: no such directory")
    nested = os.path.join(data_dir, "cifar-10-batches-bin")
    if os.path.isdir(nested):
        data_dir = nested
    names = TRAIN_FILES if train else EVAL_FILES
    files = [os.path.join(data_dir, n) for n in names
             if os.path.isfile(os.path.join(data_dir, n))]
    missing = [n for n in names if os.path.join(data_dir, n) not in files]
    if files and missing and os.path.isfile(os.path.join(data_dir, DOWNLOAD_MARKER)):
        # The official download holds all five training files: one missing is
        # a broken copy, and training on the rest would silently drop a fifth
        # of the data. A set of one's own (no marker) may hold any of them.
        raise InputError(
            f"--data_dir={data_dir}: {', '.join(missing)} missing from the CIFAR-10 "
            f"binary download ({DOWNLOAD_MARKER} is there; its training split is "
            f"{TRAIN_FILES[0]} .. {TRAIN_FILES[-1]}); restore it from "
            f"cifar-10-binary.tar.gz, or delete {DOWNLOAD_MARKER} to train on the files "
            "present")
    if files:
        return files
    pickled = [n for n in ("data_batch_1", "test_batch", "batches.meta")
               if os.path.isfile(os.path.join(data_dir, n))]
    if pickled:
        raise InputError(
            f"--data_dir={data_dir}: found the CIFAR-10 python (pickle) files "
            f"({', '.join(pickled)}); towertrain reads only the binary version "
            "(cifar-10-binary.tar.gz: data_batch_1.bin .. test_batch.bin) and never "
            "unpickles data files")
    raise InputError(f"--data_dir={data_dir}: no CIFAR-10 binary files found "
                     f"(expected {', '.join(names)})")


def check_file(path):
    """Number of records in one file; raises InputError naming the file if it is bad."""
    size = os.path.getsize(path)
    if size == 0 or size % RECORD_BYTES:
        raise InputError(f"{path}: {size} bytes is not a whole number of "
                         f"{RECORD_BYTES}-byte CIFAR-10 records (truncated or not "
                         "the binary format)")
    labels = np.memmap(path, dtype=np.uint8, mode="r")[::RECORD_BYTES]
    bad = np.flatnonzero(labels >= NUM_CLASSES)
    if bad.size:
        raise InputError(f"{path}: record {bad[0]} has label {labels[bad[0]]}, outside "
                         f"[0, {NUM_CLASSES})")
    return size // RECORD_BYTES


def decode(record):
    """Raw record -> (uint8 image HWC 32x32x3, int32 label)."""
    data = tf.io.decode_raw(record, tf.uint8)
    label = tf.cast(data[0], tf.int32)
    image = tf.reshape(data[LABEL_BYTES:], [3, 32, 32])
    return tf.transpose(image, [1, 2, 0]), label


def dataset_input(data_dir, global_batch, train=True, num_epochs=None, seed=0,
                  data_format="NHWC", distortions=True, options=None, share=None):
    """A DatasetInput of preprocessed global batches in `data_format`.
    distortions: random pad-4 crops and flips in training (Params' and the
    command line's default is tf_cnn_benchmarks' --nodistortions). share: a
    multi-worker run's slicing.WorkerShare (only its rows are decoded)."""
    files = find_files(data_dir, train)
    num_examples = sum(check_file(f) for f in files)
    records = tf.data.FixedLengthRecordDataset(files, RECORD_BYTES)

    def train_map(record, example_seed):
        image, label = decode(record)
        return preprocessing.cifar_train(image, example_seed, distortions), label

    def eval_map(record, example_seed):
        del example_seed
        image, label = decode(record)
        return preprocessing.cifar_eval(image), label

    def eval_fn(batch_size):
        return eval_data(data_dir, batch_size, data_format)

    return records_input(records, data_dir, global_batch, num_examples, train, num_epochs,
                         seed, train_map, eval_map, data_format, eval_fn=eval_fn,
                         options=options or dataset_options.DEFAULT,
                         share=share if train else None)


def eval_data(data_dir, batch_size, data_format="NHWC"):
    """The test split (test_batch.bin) as EvalData; InputError if it is missing."""
    files = find_files(data_dir, train=False)
    num_examples = sum(check_file(f) for f in files)

    def eval_map(record, example_seed):
        del example_seed  # eval is deterministic
        image, label = decode(record)
        return preprocessing.cifar_eval(image), label

    records = tf.data.FixedLengthRecordDataset(files, RECORD_BYTES)
    return eval_records(records, num_examples, batch_size, eval_map, data_format,
                        f"cifar10 {', '.join(os.path.basename(f) for f in files)}")


def read_examples(data_dir, train=True):
    """(uint8 NHWC images, int32 labels) of a split, for the queue input and tests."""
    images, labels = [], []
    for path in find_files(data_dir, train):
        check_file(path)
        raw = np.fromfile(path, dtype=np.uint8).reshape(-1, RECORD_BYTES)
        labels.append(raw[:, 0].astype(np.int32))
        images.append(raw[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    return np.concatenate(images), np.concatenate(labels)
