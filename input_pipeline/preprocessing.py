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


def cifar_train(image, seed, distortions=True):
    """uint8 HWC 32x32 -> pad 4, random 32x32 crop, random flip, standardized.
    distortions=False (tf_cnn_benchmarks' --nodistortions): standardized only."""
    if not distortions:
        return cifar_eval(image)
    crop_seed, flip_seed = tf.unstack(_split_seed(seed, 2))
    image = tf.pad(image, [[CIFAR_PAD, CIFAR_PAD], [CIFAR_PAD, CIFAR_PAD], [0, 0]])
    image = tf.image.stateless_random_crop(image, [CIFAR_SIZE, CIFAR_SIZE, 3], crop_seed)
    image = tf.image.stateless_random_flip_left_right(image, flip_seed)
    return tf.image.per_image_standardization(image)


def cifar_eval(image):
    return tf.image.per_image_standardization(image)


# tf_cnn_benchmarks' --resize_method names; round_robin cycles through them.
RESIZE_METHODS = ("nearest", "bilinear", "bicubic", "area")


def _resize(image, size, method, seed):
    """Resize to size x size with --resize_method (float32 out). round_robin:
    the method by the example's position in its epoch (seed[1]) modulo 4, as
    tf_cnn_benchmarks picks it by the position in the batch."""
    if method != "round_robin":
        return tf.cast(tf.image.resize(image, [size, size], method=method), tf.float32)
    position = tf.cast(tf.cast(seed, tf.int64)[1] % len(RESIZE_METHODS), tf.int32)
    branches = [lambda m=m: tf.cast(tf.image.resize(image, [size, size], method=m),
                                    tf.float32) for m in RESIZE_METHODS]
    return tf.switch_case(position, branches)


def distort_color(image, seed):
    """tf_cnn_benchmarks' colour distortion of a [0, 1] float image: random
    brightness, saturation, hue and contrast in one of two orders (by the
    example's position parity), clipped to [0, 1]."""
    bright, sat, hue, contrast = tf.unstack(_split_seed(seed, 4))

    def brightness(x):
        return tf.image.stateless_random_brightness(x, 32.0 / 255.0, bright)

    def saturation(x):
        return tf.image.stateless_random_saturation(x, 0.5, 1.5, sat)

    def hue_(x):
        return tf.image.stateless_random_hue(x, 0.2, hue)

    def contrast_(x):
        return tf.image.stateless_random_contrast(x, 0.5, 1.5, contrast)

    odd = tf.equal(tf.cast(seed, tf.int64)[1] % 2, 1)
    image = tf.cond(odd, lambda: hue_(saturation(contrast_(brightness(image)))),
                    lambda: contrast_(hue_(saturation(brightness(image)))))
    return tf.clip_by_value(image, 0.0, 1.0)


def imagenet_train(encoded, bbox, image_size, seed, distortions=False,
                   resize_method="bilinear"):
    """JPEG -> bbox-aware distorted crop, resize to image_size, random flip;
    with distortions also random colours (tf_cnn_benchmarks' --distortions).

    bbox: [1, N, 4] boxes (ymin, xmin, ymax, xmax in [0, 1]); N may be 0, and
    then the whole image counts as the object. resize_method 'crop': a random
    image_size window of the photo instead (no box, no resize; the photo must
    be at least that large).
    """
    box_seed, flip_seed = tf.unstack(_split_seed(seed, 2))
    if resize_method == "crop":
        image = tf.io.decode_jpeg(encoded, channels=3)
        image = tf.image.stateless_random_crop(image, [image_size, image_size, 3], box_seed)
        image = tf.cast(image, tf.float32)
    else:
        shape = tf.io.extract_jpeg_shape(encoded)
        begin, size, _ = tf.image.stateless_sample_distorted_bounding_box(
            shape, bounding_boxes=bbox, seed=box_seed, min_object_covered=0.1,
            aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 1.0), max_attempts=100,
            use_image_if_no_bounding_boxes=True)
        # Decoding only the crop window saves most of the decode on large photos.
        window = tf.stack([begin[0], begin[1], size[0], size[1]])
        image = tf.io.decode_and_crop_jpeg(encoded, window, channels=3)
        image = _resize(image, image_size, resize_method, seed)
    if distortions:  # before the flip, which it commutes with (a pixel permutation)
        color_seed = tf.stack([_split_seed(flip_seed, 1)[0][0],
                               tf.cast(seed, tf.int64)[1]])  # [1]: the position
        image = distort_color(tf.clip_by_value(image, 0.0, 255.0) / 255.0, color_seed) * 255.0
    image = tf.image.stateless_random_flip_left_right(image, flip_seed)
    return tf.clip_by_value(image, 0.0, 255.0) / 127.5 - 1.0


def imagenet_eval(encoded, image_size, resize_method="bilinear", seed=None):
    """JPEG -> central crop (87.5%) -> resize; deterministic. resize_method
    'crop': the central image_size window, no resize; round_robin needs the
    example's seed pair (its position)."""
    image = tf.io.decode_jpeg(encoded, channels=3)
    if resize_method == "crop":
        image = tf.image.resize_with_crop_or_pad(image, image_size, image_size)
        image = tf.cast(image, tf.float32)
    else:
        image = tf.image.central_crop(image, IMAGENET_EVAL_CROP)
        image = _resize(image, image_size, resize_method, seed)
    return tf.clip_by_value(image, 0.0, 255.0) / 127.5 - 1.0
