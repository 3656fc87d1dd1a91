"""Per-example preprocessing on the CPU: decode, augment, normalize (HWC out).

Random choices use stateless ops driven by a per-example seed pair handed in
by the pipeline (see arrays.epoch_batches), so a parallel map stays
deterministic for a given --tf_random_seed.
"""
import tensorflow as tf

CIFAR_SIZE = 32
CIFAR_PAD = 4
IMAGENET_EVAL_CROP = 0.875  # the usual central fraction before resizing


def _split_seed(seed, count):
    """`count` independent stateless seeds from one (2,) int64 seed."""
    return tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), count)


def cifar_train(image, seed):
    """uint8 HWC 32x32 -> pad 4, random 32x32 crop, random flip, standardized."""
    crop_seed, flip_seed = tf.unstack(_split_seed(seed, 2))
    image = tf.pad(image, [[CIFAR_PAD, CIFAR_PAD], [CIFAR_PAD, CIFAR_PAD], [0, 0]])
    image = tf.image.stateless_random_crop(image, [CIFAR_SIZE, CIFAR_SIZE, 3], crop_seed)
    image = tf.image.stateless_random_flip_left_right(image, flip_seed)
    return tf.image.per_image_standardization(image)


def cifar_eval(image):
    return tf.image.per_image_standardization(image)


def imagenet_train(encoded, bbox, image_size, seed):
    """JPEG -> bbox-aware distorted crop, resize to image_size, random flip.

    bbox: [1, N, 4] boxes (ymin, xmin, ymax, xmax in [0, 1]); N may be 0, and
    then the whole image counts as the object.
    """
    box_seed, flip_seed = tf.unstack(_split_seed(seed, 2))
    shape = tf.io.extract_jpeg_shape(encoded)
    begin, size, _ = tf.image.stateless_sample_distorted_bounding_box(
        shape, bounding_boxes=bbox, seed=box_seed, min_object_covered=0.1,
        aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 1.0), max_attempts=100,
        use_image_if_no_bounding_boxes=True)
    # Decoding only the crop window saves most of the decode on large photos.
    window = tf.stack([begin[0], begin[1], size[0], size[1]])
    image = tf.io.decode_and_crop_jpeg(encoded, window, channels=3)
    image = tf.image.resize(image, [image_size, image_size], method="bilinear")
    image = tf.image.stateless_random_flip_left_right(image, flip_seed)
    return tf.clip_by_value(image, 0.0, 255.0) / 127.5 - 1.0


def imagenet_eval(encoded, image_size):
    """JPEG -> central crop (87.5%) -> resize; deterministic."""
    image = tf.io.decode_jpeg(encoded, channels=3)
    image = tf.image.central_crop(image, IMAGENET_EVAL_CROP)
    image = tf.image.resize(image, [image_size, image_size], method="bilinear")
    return tf.clip_by_value(image, 0.0, 255.0) / 127.5 - 1.0
