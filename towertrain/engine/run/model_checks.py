"""Checks that a model and its input fit each other, with errors in a user's terms.

Run once by the Trainer after the model and input exist, before any step is
traced: a mistake here would otherwise surface as a shape error deep inside
the step function. Each check names the problem and the fix:

- images whose shape differs from the model's input (and, when they are its
  transpose, data in the other layout than --data_format);
- labels outside the model's classes, or one-hot labels, with the default loss
  (from_arrays: up front; from_dataset, from_generator: each batch in the step,
  see watch_labels and error_from);
- a custom loss_fn that does not return one loss per example (per_example_losses);
- a model that does not emit logits of rank 2 (batch, classes) with the
  default loss (a custom loss_fn may take any outputs);
- a model that is not built, or a layer that creates variables when called
  (the engine owns every variable before the first step).
"""
import re

import keras
import tensorflow as tf

from towertrain.input_pipeline import imagenet
from towertrain.input_pipeline.arrays import LABEL_CHECK, InputError
from towertrain.errors import ParamsError
from towertrain.errors import ModelError  # noqa: F401 - raised here



def check(model, input_source, data_format, user_model=True, default_loss=True):
    """Checks `model` against `input_source` (before staging wraps it), whose
    images are in `data_format`. Returns (classes, the input's name) where the
    step must check each tower's labels (an input of the user's own class, none
    of whose batches towertrain sees first), else None."""
    check_built(model, input_source)
    spec = element_spec(input_source)
    if spec is not None:
        check_images(model, spec[0], data_format)
    traced = None
    if user_model:
        traced = check_no_variables_on_call(model, spec[0] if spec is not None else None)
    if default_loss:
        num_classes = check_logits(model, traced)
        if spec is not None:
            check_label_shape(spec[1], num_classes)
        label_range = getattr(input_source, "label_range", None)
        check_label_range(label_range, num_classes)
        user_input = watch_labels(input_source, num_classes) if label_range is None else None
        if user_input and num_classes:
            return num_classes, user_input
    return None


def element_spec(input_source):
    """(images, labels) TensorSpecs of a dataset input's global batches, or None."""
    dataset = getattr(input_source, "dataset", None)
    if not isinstance(dataset, tf.data.Dataset):
        return None
    spec = dataset.element_spec
    if isinstance(spec, tuple) and len(spec) == 2 and all(
            isinstance(s, tf.TensorSpec) for s in spec):
        return spec
    return None


def _shape(shape):
    return tuple(None if d is None else int(d) for d in shape)


def model_input_shape(model):
    """The model's image shape without the batch dimension, or None if it has no Input."""
    try:
        inputs = model.inputs
    except (AttributeError, ValueError):
        return None
    if not inputs or len(inputs) != 1:
        return None
    return _shape(inputs[0].shape[1:])


def check_one_model(model_name, model):
    """Params(model=NAME) names a registry model; Trainer(model=...) passes one.
    Given both, the Keras model would be trained and NAME silently ignored."""
    if model is None or model_name is None:
        return
    name = getattr(model, "name", type(model).__name__)
    raise ParamsError(f"--model={model_name}: Trainer(params, model=...) trains your Keras "
                      f"model {name!r}, so Params(model={model_name!r}) would be ignored; "
                      "drop one of the two")


def check_built(model, input_source=None):
    """input_source: the Trainer's input, whose images give the shape to build for."""
    if not isinstance(model, keras.Model):
        raise ModelError(f"model: {type(model).__name__} is not a keras.Model")
    if model.built and _inputs(model) and not model.weights:
        raise ModelError(
            f"model '{model.name}' has no variables: it is built (from keras.Input), but none "
            "of its layers holds a weight, so there is nothing to train; add a layer with "
            "weights (e.g. keras.layers.Dense)")
    if model.weights and not model.trainable_weights:
        raise ModelError(
            f"model '{model.name}' has no trainable variables (model.trainable = False, or "
            "every layer frozen), so nothing would train; set model.trainable = True, or "
            "freeze only some layers")
    if len(_inputs(model)) > 1:
        names = ", ".join(repr(getattr(i, "name", "?")) for i in _inputs(model))
        raise ModelError(
            f"model '{model.name}' takes {len(_inputs(model))} inputs ({names}); towertrain "
            "feeds one image tensor per example: give the model one input (split or "
            "concatenate inside it)")
    if not model.built or not model.weights:
        spec = element_spec(input_source)
        shape = (None,) + _shape(spec[0].shape[1:]) if spec is not None else None
        example = (f"model.build({shape})" if shape is not None and None not in shape[1:]
                   else "model.build((None, height, width, channels))")
        raise ModelError(
            f"model '{model.name}' is not built (it has no variables yet); start it with "
            f"keras.Input(shape), or call {example} (or the model on one batch) before "
            "passing it to the Trainer")


def _inputs(model):
    try:
        return list(model.inputs or [])
    except (AttributeError, ValueError):  # a subclassed model: no symbolic inputs
        return []


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


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_RAISED = re.compile(r"^(\w+(?:Error|Exception)): (.*)$")


def error_text(err):
    """The line of an exception that says what went wrong: TensorFlow's traced
    errors start 'in user code:' and end with the raised one, which Keras may
    wrap ('Exception encountered when calling X.call().' then the message)."""
    lines = [line.strip() for line in _ANSI.sub("", str(err)).splitlines() if line.strip()]
    raised = [i for i, line in enumerate(lines) if _RAISED.match(line)]
    if raised:
        kind, message = _RAISED.match(lines[raised[-1]]).groups()
        wrapped = re.match(r"Exception encountered when calling (\w+)\.call\(\)", message)
        if wrapped and raised[-1] + 1 < len(lines):
            return f"{kind} in layer {wrapped.group(1)}: {lines[raised[-1] + 1]}"
        return f"{kind}: {message}"
    useful = [line for line in lines if not line.startswith((
        "File ", "in user code:", "Graph execution error", "Detected at node", "[[",
        "<stack traces", "Traceback", "^")) and not re.match(r"\d+ root error\(s\) found", line)]
    line = re.sub(r"\s*\[Op:[^\]]*\]$", "", (useful or lines or [type(err).__name__])[0])
    # Several errors at once: '(0) INVALID_ARGUMENT:  <what>'.
    line = re.sub(r"^\(\d+\) [A-Z_]+:\s*", "", line)
    # A tf.data function's error: 'Error in user-defined function passed to
    # MapDataset:1 transformation with iterator: Iterator::Root::...: <what>'.
    found = re.search(r"with iterator: \S+: (.*)$", line)
    return found.group(1) if found else line


def check_images(model, image_spec, data_format):
    """Images (batch, ...) against the model's input (None, ...)."""
    expected = model_input_shape(model)
    got = _shape(image_spec.shape[1:])
    if expected is None or image_spec.shape.rank is None:
        return
    if len(got) == len(expected) and all(
            e is None or g is None or e == g for e, g in zip(expected, got)):
        return
    message = (f"images of shape {got} do not fit model '{model.name}', which takes "
               f"{expected}")
    if len(got) == 3 and len(expected) == 3:
        nhwc_to_nchw = (got[2], got[0], got[1])
        nchw_to_nhwc = (got[1], got[2], got[0])
        if nhwc_to_nchw == expected:
            raise ModelError(
                f"{message}: the images are NHWC (channels last) but the model takes NCHW "
                f"(--data_format={data_format}); transpose them with "
                "np.transpose(images, (0, 3, 1, 2)), or build the model and run with "
                "data_format='NHWC'")
        if nchw_to_nhwc == expected:
            raise ModelError(
                f"{message}: the images are NCHW (channels first) but the model takes NHWC "
                f"(--data_format={data_format}); transpose them with "
                "np.transpose(images, (0, 2, 3, 1)), or build the model and run with "
                "data_format='NCHW'")
    raise ModelError(f"{message}; resize the images or build the model for "
                     f"input shape {got}")


def check_logits(model, traced=None):
    """The default loss (softmax cross-entropy on logits) needs one (batch, classes)
    output; returns the number of classes. traced: a concrete function of the
    model, for models without symbolic outputs (subclassed)."""
    try:
        outputs = model.outputs
    except AttributeError:
        if traced is None:
            return None
        outputs = tf.nest.flatten(traced.structured_outputs)
    if len(outputs) != 1:
        raise ModelError(
            f"model '{model.name}' has {len(outputs)} outputs; the default loss takes one "
            "output of logits (batch, classes): pass loss_fn=fn(labels, outputs) to the "
            "Trainer to combine them (see docs/concepts.md, custom losses)")
    shape = _shape(outputs[0].shape)
    if len(shape) != 2:
        raise ModelError(
            f"model '{model.name}' emits outputs of shape {shape} (rank {len(shape)}); the "
            "default loss needs logits of rank 2, (batch, classes): end the model with "
            "Flatten or GlobalAveragePooling2D and Dense(num_classes), or pass loss_fn=")
    last = model.layers[-1] if model.layers else None
    activation = getattr(last, "activation", None)
    ends_in_softmax = isinstance(last, keras.layers.Softmax) or (
        activation is not None and getattr(activation, "__name__", "") == "softmax")
    if ends_in_softmax:
        raise ModelError(
            f"model '{model.name}' ends in a softmax (layer '{last.name}'), so it emits "
            "probabilities; the default loss takes logits: drop the softmax (apply it when "
            "predicting), or pass loss_fn=")
    return shape[-1]


def check_label_shape(label_spec, num_classes):
    shape = _shape(label_spec.shape[1:])
    if label_spec.dtype.is_floating and shape and shape[-1] == num_classes and num_classes > 1:
        raise ModelError(
            f"labels of shape {shape} look one-hot; the default loss takes class indices "
            "(0 .. classes-1) of shape () or (1,): use labels.argmax(-1), or pass loss_fn=")
    if len(shape) > 1 or (shape and shape[0] != 1):
        raise ModelError(
            f"labels of shape {shape} per example: the default loss takes one class index "
            "per example, shape () or (1,); pass loss_fn= for other targets")


def check_label_range(label_range, num_classes):
    if label_range is None or num_classes is None:
        return
    low, high = label_range
    if low < 0 or high >= num_classes:
        raise ModelError(label_range_message(low, high, num_classes))


def label_range_message(low, high, num_classes, where=None):
    """The error for labels from `low` to `high` and a model of `num_classes`;
    where: the input they came from, e.g. 'towertrain.from_dataset'."""
    prefix = f"{where} input: " if where else ""
    if low < 0:
        return (f"{prefix}label {low:g} is outside the model's {num_classes} classes (0 .. "
                f"{num_classes - 1}); labels are class indices: fix the labels")
    return (f"{prefix}label {high:g} is outside the model's {num_classes} classes (0 .. "
            f"{num_classes - 1}); give the last Dense layer {int(high) + 1} units or fix "
            "the labels")


def watch_labels(input_source, num_classes):
    """Data not seen up front (from_dataset, from_generator): has the input
    check each global batch's labels against the model's classes in the step.
    Returns the class name of a user's Input subclass that makes the batches
    itself (the step then checks each tower's labels), else None."""
    while True:
        if hasattr(input_source, "label_classes"):
            if getattr(input_source, "door", None) and num_classes:
                input_source.label_classes = num_classes
            return None
        inner = getattr(input_source, "inner", None)  # staging, a worker's shard
        if inner is None:
            break
        input_source = inner
    if input_source is None or type(input_source).__module__.split(".")[0] in (
            "towertrain", "input_pipeline"):
        return None
    return type(input_source).__name__


def per_example_losses(losses, images, loss_fn):
    """`losses` (what loss_fn returned for a tower's slice), checked to hold one
    value per example: at trace time where the shapes are static, else with one
    cheap assertion in the step (turned into a ModelError by error_from)."""
    batch = tf.nest.flatten(images)[0]
    shape, size = losses.shape, batch.shape[0]
    if shape.rank is not None:
        got = _shape(shape)
        if len(got) != 1 or (None not in (got[0], size) and got[0] != size):
            error = ModelError(_loss_shape_message(_name(loss_fn), got, size))
            error.ag_pass_through = True  # raised while tracing: autograph keeps it as is
            raise error
        if got[0] is not None and size is not None:
            return losses
    ok = tf.logical_and(tf.equal(tf.rank(losses), 1),
                        tf.equal(tf.size(losses), tf.shape(batch)[0]))
    name = _name(loss_fn).replace("[", "(").replace("]", ")")
    check = tf.debugging.Assert(ok, [LOSS_CHECK, name, tf.shape(losses), tf.shape(batch)[0]])
    with tf.control_dependencies([check]):
        return tf.identity(losses)


LOSS_CHECK = "towertrain loss check:"


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


_LABEL_FAILED = re.compile(r"assertion failed: \[" + re.escape(LABEL_CHECK)
                           + r"\] \[([^\]]*)\] \[([^\]]*)\] \[([^\]]*)\] \[(\d+)\]")
_LOSS_FAILED = re.compile(r"assertion failed: \[" + re.escape(LOSS_CHECK)
                          + r"\] \[([^\]]*)\] \[([^\]]*)\] \[(\d+)\]")


_SHARD_LABEL = re.compile(r"assertion failed: \[" + re.escape(imagenet.LABEL_ASSERT)
                          + r"\] \[([^\]]*)\] \[label:\] \[(-?\d+)\] \[offset:\] \[(\d+)\] "
                          r"\[num_classes:\] \[(\d+)\]")
_SHARD_JPEG = re.compile(r"assertion failed: \[" + re.escape(imagenet.JPEG_ASSERT)
                         + r"\] \[([^\]]*)\]")


def error_from(err):
    """The ModelError (InputError for a shard's record) for a step that failed
    one of the in-graph checks (labels, per-example losses, ImageNet
    records), or None for any other error."""
    text = getattr(err, "message", None) or str(err)
    found = _SHARD_LABEL.search(text)
    if found:
        path, label, offset, classes = found.groups()
        return InputError(imagenet.label_message(path, None, int(label), int(offset),
                                                 int(classes)))
    found = _SHARD_JPEG.search(text)
    if found:
        return InputError(imagenet.jpeg_message(found.group(1), None, "tf.io.is_jpeg: no"))
    found = _LABEL_FAILED.search(text)
    if found:
        where, low, high, classes = found.groups()
        return ModelError(label_range_message(float(low), float(high), int(classes), where))
    found = _LOSS_FAILED.search(text)
    if found:
        name, shape, size = found.groups()
        got = tuple(int(d) for d in shape.split())
        return ModelError(_loss_shape_message(name, got, int(size)))
    return None


def check_no_variables_on_call(model, image_spec=None):
    """Traces the forward pass once (no compute) and fails if it made new variables."""
    if image_spec is not None and image_spec.shape.rank is not None:
        spec = tf.TensorSpec([None] + list(image_spec.shape[1:]), image_spec.dtype)
    else:
        shape = model_input_shape(model)
        if shape is None:
            return None
        spec = tf.TensorSpec((None,) + shape, tf.float32)
    before = {id(v) for v in model.variables}
    try:
        with tf.device("/cpu:0"):
            traced = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec)
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001 - said in the user's terms, cause attached
        if "variable" in str(err).lower() and "creat" in str(err).lower():
            raise ModelError(_variables_on_call_message(model, [], err)) from err
        raise ModelError(f"model '{model.name}' fails when called on images of shape "
                         f"{_shape(spec.shape[1:])}: {error_text(err)}") from err
    created = [v.path for v in model.variables if id(v) not in before]
    # A tf.Variable a layer made lazily in call() is used but not tracked by
    # Keras: the engine would neither copy it to the devices nor train it.
    known = {_tf_name(v) for v in model.variables}
    created += [v.name.split(":")[0] for v in traced.variables if v.name not in known]
    if created:
        raise ModelError(_variables_on_call_message(model, created))
    return traced


def _tf_name(variable):
    value = getattr(variable, "value", variable)  # a Keras variable wraps a tf.Variable
    return getattr(value, "name", None)


def _variables_on_call_message(model, created, err=None):
    names = ", ".join(created[:3]) + (", ..." if len(created) > 3 else "")
    what = f" ({names})" if names else ""
    return (f"model '{model.name}': a layer creates variables when it is called{what}; "
            "towertrain creates every device's copy before training, so each variable must "
            "exist once the model is built: create them in the layer's build() or "
            "__init__, not in call()" + (f" [{str(err).splitlines()[0]}]" if err else ""))
