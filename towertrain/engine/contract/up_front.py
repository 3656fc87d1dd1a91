"""Checks that a model and its input fit each other, before any step, with
errors in a user's terms.

Run once by the Trainer after the model and input exist, before any step is
traced: a mistake here would otherwise surface as a shape error deep inside
the step function. Each check names the problem and the fix:

- images whose shape differs from the model's input (and, when they are its
  transpose, data in the other layout than --data_format);
- labels outside the model's classes, or one-hot labels, with the default loss
  (from_arrays: up front; from_dataset, from_generator: each batch in the step,
  see watch_labels and towertrain.engine.contract.in_step);
- a model that does not emit logits of rank 2 (batch, classes) with the
  default loss (a custom loss_fn may take any outputs; that it returns one
  loss per example is checked in the step: in_step.per_example_losses);
- a model that is not built, or a layer that creates variables when called
  (the engine owns every variable before the first step).
"""
import keras
import tensorflow as tf

from towertrain import tf_errors
from towertrain.engine.contract import keras_model
from towertrain.errors import ModelError, ParamsError


def check(model, input_source, data_format, user_model=True, default_loss=True):
    """Checks `model` against `input_source` (before staging wraps it), whose
    images are in `data_format`. Returns (classes, the input's name) where the
    step must check each tower's labels (an input of the user's own class, none
    of whose batches towertrain sees first), else None."""
    check_built(model, input_source)
    spec = element_spec(input_source)
    if spec is not None:
        check_images(model, spec[0], data_format)
    keras_model.check_pixel_range(model, input_source)
    traced = None
    if user_model:
        traced = check_no_variables_on_call(model, spec[0] if spec is not None else None)
    if default_loss:
        num_classes = check_logits(model, traced)
        keras_model.check_not_probabilities(model, traced, num_classes)
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
    if (not model.built or not model.weights) and not isinstance(model, keras.Sequential):
        # A subclassed model (a functional one is built from keras.Input, checked
        # above): Keras 3 creates its variables only when it is first called;
        # its build(shape) marks it built and creates nothing.
        raise ModelError(
            f"model '{model.name}' has no variables yet: a subclassed keras.Model creates "
            "them when it is first called (model.build(shape) creates none in Keras 3); "
            "call it on one batch, e.g. model(images[:1]), before passing it to the Trainer")
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
            if getattr(input_source, "entry_point", None) and num_classes:
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
        if tf_errors.says_variable_created(str(err)):
            raise ModelError(_variables_on_call_message(model, [], err)) from err
        raise ModelError(f"model '{model.name}' fails when called on images of shape "
                         f"{_shape(spec.shape[1:])}: {tf_errors.error_text(err)}") from err
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
