"""What Keras' own `fit` would use of a model passed in, besides its layers and
losses (which the step uses: engine/step/model_call.py), each used or refused
by name before any step: its compile() settings (refused: the Trainer trains
with Params and loss_fn), its data format (followed, or refused against a
Params that says another), the range of the images it is fed (refused when
raw pixels meet a model that does not rescale them), and what it emits
(probabilities, where the default loss takes logits: refused by what the
outputs are, whichever layer or call() made them). The dtype policy is
recipe/precision.py's check_model.
"""
import keras
import tensorflow as tf

from towertrain import private_api
from towertrain.errors import InputError, ModelError, ParamsError

# Every argument of keras.Model.compile: where the Trainer takes it instead.
# A compiled model is refused naming the ones it was given (its optimizer always:
# compile() sets one), so none is silently ignored.
COMPILE_SETTINGS = {
    "optimizer": "the optimizer as Params(optimizer=, init_learning_rate=, gradient_clip=, "
                 "weight_decay=)",
    "loss": "the loss as Trainer(loss_fn=fn(labels, outputs), one value per example)",
    "loss_weights": "the loss as Trainer(loss_fn=fn(labels, outputs), one value per example)",
    "metrics": "metrics from trainer.evaluate() (top-1, top-5) and each step's loss and top-1",
    "weighted_metrics": "metrics from trainer.evaluate() (top-1, top-5) and each step's loss "
                        "and top-1",
    "jit_compile": "XLA as Params(xla_compile=True)",
    "run_eagerly": "nothing for run_eagerly or steps_per_execution (every step is one "
                   "tf.function call)",
    "steps_per_execution": "nothing for run_eagerly or steps_per_execution (every step is one "
                           "tf.function call)",
    # Not in Keras' compile config: a compiled model is refused whatever it is.
    "auto_scale_loss": "loss scaling as Params(use_fp16=True, fp16_loss_scale=)",
}
# Settings at these values were not given (Keras resolves jit_compile='auto').
_UNSET = {"loss": None, "loss_weights": None, "metrics": None, "weighted_metrics": None,
          "run_eagerly": False, "steps_per_execution": 1, "jit_compile": False}


def check_usable(model):
    """Refuses what the Trainer would not use of a model passed in; before any work."""
    if not isinstance(model, keras.Model):
        raise ModelError(f"model: {type(model).__name__} is not a keras.Model")
    check_not_compiled(model)


def check_not_compiled(model):
    """A model given compile() settings: Keras' fit would train with them, the
    Trainer would not; refused naming them and where the Trainer takes each."""
    config = model.get_compile_config() if getattr(model, "compiled", False) else None
    if not config:
        return
    given = [f"optimizer={_optimizer(config.get('optimizer'))}"]
    hints = [COMPILE_SETTINGS["optimizer"]]
    for name, value in config.items():
        if name == "optimizer" or _UNSET.get(name, object()) == value or value == "auto":
            continue
        given.append(f"{name}={value!r}")
        if COMPILE_SETTINGS.get(name) and COMPILE_SETTINGS[name] not in hints:
            hints.append(COMPILE_SETTINGS[name])
    raise ParamsError(
        f"model '{model.name}' is compiled ({', '.join(given)}), but the Trainer trains with "
        "its Params and loss_fn, never with compile()'s settings, which would be ignored: "
        f"give {'; '.join(hints)}; and pass the model uncompiled (a saved one: "
        "keras.saving.load_model(path, compile=False))")


def _optimizer(serialized):
    """'AdamW(learning_rate=0.001, weight_decay=0.5, clipnorm=1.0)' of a compile config's:
    the rate, and every option that differs from its class's defaults (whatever
    options the class has)."""
    if isinstance(serialized, str) or not isinstance(serialized, dict):
        return repr(serialized)
    options = serialized.get("config", {})
    defaults = _class_defaults(serialized)
    named = [f"{key}={value:.6g}" if isinstance(value, float) else f"{key}={value!r}"
             for key, value in options.items()
             if key == "learning_rate" or
             (key != "name" and key in defaults and value != defaults[key])]
    return f"{serialized.get('class_name', '?')}({', '.join(named)})"


def _class_defaults(serialized):
    """The config of the serialized optimizer's class built with no arguments
    ({} where Keras cannot build one)."""
    try:
        fresh = keras.optimizers.deserialize({"class_name": serialized.get("class_name"),
                                              "module": serialized.get("module"),
                                              "config": {}})
        return fresh.get_config()
    except (TypeError, ValueError):
        return {}


# --- data format ---------------------------------------------------------------

_KERAS_TO_RUN = {"channels_last": "NHWC", "channels_first": "NCHW"}


def model_data_format(model):
    """(format, layer name): the layout the model's first layer with one computes
    in ('NHWC' or 'NCHW'), or (None, None) for a model without one (dense only).
    Flatten is skipped: its data_format orders the flattened values, it does not
    say the images' layout."""
    for layer in private_api.flatten_layers(model):
        if isinstance(layer, keras.layers.Flatten):
            continue
        found = _KERAS_TO_RUN.get(getattr(layer, "data_format", None))
        if found:
            return found, layer.name
    return None, None


def run_data_format(asked, model):
    """The layout a model passed in trains in, given the asked one (None: not
    asked): the one its layers were built for, whatever the run says; asking
    for another is refused (the header would say one layout and train the other)."""
    found, layer = model_data_format(model)
    if found is None or asked == found:
        return asked
    if asked is None:
        return found
    keras_name = {v: k for k, v in _KERAS_TO_RUN.items()}
    raise ParamsError(
        f"--data_format={asked}: model '{model.name}' computes in {found} (its "
        f"layer '{layer}' has data_format='{keras_name[found]}'), and a model passed in is "
        f"trained in the layout it was built for; drop data_format (the run follows the "
        f"model), or build the model with data_format='{keras_name[asked]}'")


# --- the images' range -----------------------------------------------------------

def check_pixel_range(model, input_source):
    """Images of raw pixel values (not negative, beyond 0..1: 0..255) fed to a
    model that does not rescale them train to a loss of ~1,000 with no other
    sign; refused unless a layer of the model rescales (Rescaling, Normalization)."""
    pixel_range = getattr(input_source, "pixel_range", None)
    if pixel_range is None:
        return
    low, high = pixel_range
    if low < 0 or high <= RAW_PIXEL_FLOOR:
        return
    if any(isinstance(layer, (keras.layers.Rescaling, keras.layers.Normalization))
           for layer in private_api.flatten_layers(model)):
        return
    raise InputError(
        f"from_arrays: images hold values {low:g}..{high:g} (the range of raw pixels) and "
        f"model '{model.name}' does not rescale them (no keras.layers.Rescaling or "
        "Normalization layer); pass images / 255 (or standardize each image, as the CIFAR-10 "
        "reader does), or start the model with keras.layers.Rescaling(1 / 255)")


# Images scaled to 0..1 stay below it; raw 8-bit pixels go up to 255.
RAW_PIXEL_FLOOR = 2.0


# --- what the model emits ----------------------------------------------------------

def check_not_probabilities(model, traced, num_classes, examples=4):
    """With the default loss (softmax cross-entropy on logits): outputs that are
    probability distributions (every value in 0..1, each example's summing to 1,
    on random images) come from a softmax, a layer's or one inside call(), and
    would be trained as logits. traced: the model's concrete function (a model
    passed in; up_front.check_no_variables_on_call), run once on `examples`."""
    if traced is None or not num_classes or num_classes < 2:
        return
    spec = traced.structured_input_signature[0][0]
    images = tf.random.stateless_normal((examples,) + tuple(spec.shape[1:]), seed=(5, 7))
    with tf.device("/cpu:0"):
        outputs = tf.cast(tf.nest.flatten(traced(tf.cast(images, spec.dtype)))[0], tf.float32)
    in_unit = bool(tf.reduce_all((outputs >= 0.0) & (outputs <= 1.0)))
    sums = tf.reduce_sum(outputs, axis=-1)
    if in_unit and bool(tf.reduce_all(tf.abs(sums - 1.0) < 1e-3)):
        raise ModelError(
            f"model '{model.name}' emits probabilities (on sample images its {num_classes} "
            "outputs per example lie in 0..1 and sum to 1: a softmax, in a layer or in "
            "call()); the default loss takes logits: drop the softmax (apply it when "
            "predicting), or pass loss_fn=")
