"""ImageNet from TFRecord shards in the standard layout (build_imagenet_data.py).

Files `train-*` and `validation-*`; each record is a tf.train.Example with
`image/encoded` (JPEG), `image/class/label` (1..1000 in the standard layout;
label_offset=1 maps it to 0..999) and optionally `image/object/bbox/{ymin,xmin,
ymax,xmax}`.

Before training every shard's record framing is walked (length + its CRC,
seeking over the payloads): that counts the examples for --num_epochs and
reports a truncated or corrupt shard by name before any step runs. A payload
damaged inside an intact frame is caught by TensorFlow's own CRC check when it
is read. The first records of the shards are parsed and decoded up front
(check_sample: labels in range, JPEG images); a bad record met later stops
the step with one line naming its shard (towertrain.engine.contract.in_step.error_from).
"""
import glob
import os
import struct

import tensorflow as tf

from towertrain import tf_errors

from . import dataset_options, preprocessing
from .arrays import (SHARDS, InputError, epoch_seed, eval_records, records_input,
                     seeded_shuffle)

_CRC_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def _masked_crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def find_files(data_dir, train=True):
    if not os.path.isdir(data_dir):
        raise InputError(f"--data_dir={data_dir}: no such directory")
    prefix = "train" if train else "validation"
    files = sorted(glob.glob(os.path.join(data_dir, f"{prefix}-*")))
    if not files:
        raise InputError(f"--data_dir={data_dir}: no ImageNet TFRecord shards "
                         f"({prefix}-*) found")
    return files


def count_records(path):
    """Records in one shard, walking the framing; InputError names a bad shard."""
    size = os.path.getsize(path)
    count = offset = 0
    with open(path, "rb") as f:
        while offset < size:
            header = f.read(12)
            if len(header) < 12:
                raise InputError(f"{path}: truncated TFRecord header at byte {offset}")
            length, length_crc = struct.unpack("<QI", header)
            if _masked_crc32c(header[:8]) != length_crc:
                raise InputError(f"{path}: corrupt TFRecord (bad length checksum at byte "
                                 f"{offset})")
            offset += 12 + length + 4
            if offset > size:
                raise InputError(f"{path}: truncated TFRecord (record {count} runs past "
                                 "the end of the file)")
            f.seek(offset)
            count += 1
    if count == 0:
        raise InputError(f"{path}: empty TFRecord shard")
    return count


_FEATURES = {
    "image/encoded": tf.io.FixedLenFeature([], tf.string),
    "image/class/label": tf.io.FixedLenFeature([], tf.int64),
    **{f"image/object/bbox/{k}": tf.io.VarLenFeature(tf.float32)
       for k in ("ymin", "xmin", "ymax", "xmax")},
}


SAMPLE_PER_SHARD, SAMPLE_SHARDS = 2, 64


def check_sample(files, num_classes, label_offset=1):
    """Reads the first records of (up to SAMPLE_SHARDS evenly spread) shards
    before training: a label outside 1..num_classes (0 in a 0-based export) or
    an image that is not a decodable JPEG is an InputError naming the shard,
    the record and the fix, not a TensorFlow dump in the warm-up."""
    step = max(1, len(files) // SAMPLE_SHARDS)
    for path in files[::step]:
        try:
            records = list(tf.data.TFRecordDataset(path).take(SAMPLE_PER_SHARD))
        except tf.errors.DataLossError as err:  # a payload damaged inside its frame
            raise InputError(f"--data_dir={os.path.dirname(path)}: a record of "
                             f"{os.path.basename(path)} is corrupt ({_tf_reason(err)}); "
                             "restore the shard from its source") from None
        for index, record in enumerate(records):
            features = tf.io.parse_single_example(record, _FEATURES)
            label = int(features["image/class/label"])
            if not 0 <= label - label_offset < num_classes:
                raise InputError(label_message(path, index, label, label_offset, num_classes))
            encoded = features["image/encoded"]
            try:
                if not bool(tf.io.is_jpeg(encoded)):
                    raise ValueError("not a JPEG")
                tf.io.decode_jpeg(encoded, channels=3)
            except (tf.errors.OpError, ValueError) as err:
                raise InputError(jpeg_message(path, index, str(err).splitlines()[0])) from None


def _tf_reason(err):
    text = tf_errors.FUNCTION_NODE.sub("", str(err).strip().splitlines()[0])
    return tf_errors.OP_SUFFIX.sub("", text)


def label_message(path, index, label, label_offset, num_classes):
    where = f"record {index} of " if index is not None else ""
    low, high = label_offset, num_classes - 1 + label_offset
    return (f"{where}{path}: label {label} is outside {low}..{high}: towertrain reads "
            f"ImageNet labels {label_offset}-based (1..1000 in the standard layout, shifted "
            f"to 0..{num_classes - 1}); fix the shard's labels (a 0-based export: add 1 to "
            "every label)")


def jpeg_message(path, index, why):
    where = f"record {index} of " if index is not None else "a record of "
    return (f"{where}{path}: image/encoded is not a decodable JPEG ({why}); re-encode the "
            "shard's images as JPEG (build_imagenet_data.py converts PNG and CMYK ones)")


def parse(record, filename, num_classes, label_offset=1):
    """Serialized Example -> (JPEG bytes, int32 label, bbox [1, N, 4]).

    A label outside [0, num_classes) after the offset fails naming the shard.
    """
    features = tf.io.parse_single_example(record, _FEATURES)
    label = tf.cast(features["image/class/label"], tf.int32) - label_offset
    check = tf.debugging.Assert(
        tf.logical_and(label >= 0, label < num_classes),
        [tf_errors.SHARD_LABEL_CHECK, filename, "label:", label + label_offset, "offset:", label_offset,
         "num_classes:", num_classes])
    # Not a JPEG: the decode's error names neither the file nor the record.
    is_jpeg = tf.debugging.Assert(tf.io.is_jpeg(features["image/encoded"]),
                                  [tf_errors.SHARD_JPEG_CHECK, filename])
    with tf.control_dependencies([check, is_jpeg]):
        label = tf.identity(label)
    coords = [tf.sparse.to_dense(features[f"image/object/bbox/{k}"])
              for k in ("ymin", "xmin", "ymax", "xmax")]
    bbox = tf.expand_dims(tf.stack(coords, axis=1), 0)
    return features["image/encoded"], label, bbox


def dataset_input(data_dir, global_batch, image_size, num_classes=1000, train=True,
                  num_epochs=None, seed=0, data_format="NHWC", label_offset=1,
                  distortions=False, resize_method="bilinear", options=None, share=None):
    """A DatasetInput of preprocessed global batches in `data_format`.
    distortions adds random colours to training; resize_method is
    tf_cnn_benchmarks' (towertrain.input_pipeline.preprocessing). share: a
    multi-worker run's slicing.WorkerShare (only its rows are decoded)."""
    files = find_files(data_dir, train)
    num_examples = sum(count_records(f) for f in files)
    check_sample(files, num_classes, label_offset)
    if train:
        def records(epoch):  # shard order shuffled per epoch, a function of (seed, epoch)
            return _records(files, shuffle_seed=epoch_seed(seed, epoch, SHARDS),
                            options=options)
    else:
        records = _records(files)

    def train_map(example, example_seed):
        encoded, label, bbox = parse(*example, num_classes, label_offset)
        return preprocessing.imagenet_train(encoded, bbox, image_size, example_seed,
                                            distortions, resize_method), label

    def eval_map(example, example_seed):
        encoded, label, _ = parse(*example, num_classes, label_offset)
        return preprocessing.imagenet_eval(encoded, image_size, resize_method,
                                           example_seed), label

    def eval_fn(batch_size):
        return eval_data(data_dir, batch_size, image_size, num_classes, data_format,
                         label_offset, resize_method)

    return records_input(records, data_dir, global_batch, num_examples, train, num_epochs,
                         seed, train_map, eval_map, data_format, eval_fn=eval_fn,
                         options=options or dataset_options.DEFAULT,
                         share=share if train else None)


def _records(files, shuffle_seed=None, options=None):
    """(record, shard name) pairs, so errors can point at the file; shards in
    file order unless a shuffle seed is given. options: the training run's
    --datasets_* interleave knobs."""
    records = tf.data.Dataset.from_tensor_slices(files)
    if shuffle_seed is not None:
        records = seeded_shuffle(records, len(files), shuffle_seed)

    def read(f):
        return tf.data.TFRecordDataset(f).map(lambda r: (r, f))
    # cycle_length=1 keeps file order for eval; training interleaves shards.
    if shuffle_seed is None:
        options = dataset_options.DEFAULT._replace(interleave_cycle_length=1)
    return dataset_options.interleave(records, read, options or dataset_options.DEFAULT,
                                      default_cycle_length=min(len(files), 8))


def eval_data(data_dir, batch_size, image_size, num_classes=1000, data_format="NHWC",
              label_offset=1, resize_method="bilinear"):
    """The validation-* shards as EvalData, in file order; InputError if missing."""
    files = find_files(data_dir, train=False)
    num_examples = sum(count_records(f) for f in files)
    check_sample(files, num_classes, label_offset)

    def eval_map(example, example_seed):
        # Deterministic: the seed pair only carries the position (round_robin).
        encoded, label, _ = parse(*example, num_classes, label_offset)
        return preprocessing.imagenet_eval(encoded, image_size, resize_method,
                                           example_seed), label

    return eval_records(_records(files), num_examples, batch_size, eval_map, data_format,
                        f"imagenet validation-* ({len(files)} shards)")
