"""The contract's checks that run inside the step, and their failures said
in the user's terms.

Some checks can only run on the data: a user's loss_fn returning one loss
per example where shapes are dynamic (per_example_losses, built into each
tower), labels from from_dataset / from_generator against the model's
classes (input_pipeline.arrays.label_check), an ImageNet record's label and
JPEG (input_pipeline.imagenet.parse). Each is a tf.debugging.Assert whose
first item is a prefix of towertrain.tf_errors; when the step fails,
error_from reads that assertion back into the ModelError or InputError it
stands for. loss_fn_problem tells a non-finite loss from bad input after a
first step that was not finite.
"""
import tensorflow as tf

from towertrain import tf_errors
from towertrain.engine.contract import up_front
from towertrain.errors import InputError, ModelError
from towertrain.input_pipeline import imagenet


def per_example_losses(losses, images, loss_fn):
    """`losses` (what loss_fn returned for a tower's slice), checked to hold one
    value per example: at trace time where the shapes are static, else with one
    cheap assertion in the step (turned into a ModelError by error_from)."""
    batch = tf.nest.flatten(images)[0]
    shape, size = losses.shape, batch.shape[0]
    if shape.rank is not None:
        got = tuple(shape.as_list())
        if len(got) != 1 or (None not in (got[0], size) and got[0] != size):
            error = ModelError(_loss_shape_message(_name(loss_fn), got, size))
            error.ag_pass_through = True  # raised while tracing: autograph keeps it as is
            raise error
        if got[0] is not None and size is not None:
            return losses
    ok = tf.logical_and(tf.equal(tf.rank(losses), 1),
                        tf.equal(tf.size(losses), tf.shape(batch)[0]))
    # Brackets delimit the assertion's printed items: none inside the name.
    name = _name(loss_fn).replace("[", "(").replace("]", ")")
    check = tf.debugging.Assert(
        ok, [tf_errors.LOSS_CHECK, name, tf.shape(losses), tf.shape(batch)[0]])
    with tf.control_dependencies([check]):
        return tf.identity(losses)


def _name(loss_fn):
    name = getattr(loss_fn, "__name__", None)
    return name if isinstance(name, str) else type(loss_fn).__name__


def _loss_shape_message(name, got, size):
    what = "a single value, shape ()" if not got else f"shape {got}"
    where = f"a slice of {size} examples" if size is not None else "a tower's slice"
    want = f"({size},)" if size is not None else "(examples,)"
    return (f"loss_fn '{name}' returned {what} for {where}; towertrain needs one loss per "
            f"example, shape {want}, which it sums and divides by the global batch: return "
            "per-example losses, e.g. keras.losses.SparseCategoricalCrossentropy("
            "from_logits=True, reduction=None) or "
            "keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)")


def error_from(err):
    """The ModelError (InputError for a shard's record) for a step that failed
    one of the in-graph checks (labels, per-example losses, ImageNet
    records), or None for any other error."""
    text = getattr(err, "message", None) or str(err)
    for prefix, read in _READERS:
        fields = tf_errors.assertion_fields(text, prefix)
        if fields is None:
            continue
        try:
            return read(*fields)
        except (TypeError, ValueError):  # not the items this check prints
            continue
    return None


def _shard_label(path, _label, label, _offset, offset, _classes, classes):
    return InputError(imagenet.label_message(path, None, int(label), int(offset),
                                             int(classes)))


def _shard_jpeg(path):
    return InputError(imagenet.jpeg_message(path, None, "tf.io.is_jpeg: no"))


def _label_range(where, low, high, classes):
    return ModelError(up_front.label_range_message(float(low), float(high), int(classes),
                                                   where))


def _loss_shape(name, shape, size):
    got = tuple(int(d) for d in shape.split())
    return ModelError(_loss_shape_message(name, got, int(size)))


# Each in-graph check's prefix, and its printed items back into its error.
_READERS = ((tf_errors.SHARD_LABEL_CHECK, _shard_label),
            (tf_errors.SHARD_JPEG_CHECK, _shard_jpeg),
            (tf_errors.LABEL_CHECK, _label_range),
            (tf_errors.LOSS_CHECK, _loss_shape))


def loss_fn_problem(loss_fn, model):
    """What a user's loss_fn returns on finite logits (zeros) and classes 0
    and 1, when that is not finite: the text naming it, else None. Asked only
    once a first step from the initial weights was not finite (a recording
    loss_fn would count the call), to tell the loss from the input."""
    try:
        num_classes = int(model.output_shape[-1])
        labels = tf.constant([0, min(1, num_classes - 1)], tf.int32)
        with tf.device("/cpu:0"):
            losses = tf.convert_to_tensor(loss_fn(labels, tf.zeros((2, num_classes))))
        finite = bool(tf.reduce_all(tf.math.is_finite(tf.cast(losses, tf.float32))))
    except Exception:  # noqa: BLE001 - other label forms: nothing to say
        return None
    if finite:
        return None
    return (f"loss_fn '{_name(loss_fn)}' returns {losses.numpy().tolist()} for finite logits "
            "(zeros) and labels 0 and 1, so the NaN or Inf comes from the loss itself; fix "
            "the loss_fn (a log or a division of 0?)")
