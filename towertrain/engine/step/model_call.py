"""How the towers and the evaluators call a Keras model: as Keras' own `fit`
and `evaluate` do on the TensorFlow backend, `model(x, training=...)`, with
the values the variable manager hands in (a keras.StatelessScope).

Not `model.stateless_call`: that runs `model.call` directly, so layers under
a call() that does not pass `training` on (a Dropout in a subclassed model)
run in inference mode, and the model's own activity regularizer is skipped;
`model(...)` sets the phase for every layer below it. A model whose call()
takes no `training` argument is called without one, as Keras' fit and
evaluate call it (its layers then run in their default phase).
"""
import collections

import keras

# outputs; the new non-trainable values (batch-norm statistics, seed states);
# the losses the model adds (Model.losses: weight regularizers of the values
# handed in, activity regularizers, add_loss), empty when not training.
ModelCall = collections.namedtuple("ModelCall", "outputs non_trainable losses")


def call(model, trainable, non_trainable, images, training):
    """Calls `model` on `images` with `trainable` and `non_trainable` values
    (lists in the order of model.trainable_variables / non_trainable_variables)."""
    mapping = (list(zip(model.trainable_variables, trainable))
               + list(zip(model.non_trainable_variables, non_trainable)))
    with keras.StatelessScope(state_mapping=mapping, collect_losses=training) as scope:
        outputs = model(images, **phase(model, training))
        # Read in the scope: the weight regularizers see the values handed in.
        losses = list(model.losses) if training else []
    new_non_trainable = [scope.get_current_value(v) for v in model.non_trainable_variables]
    return ModelCall(outputs, new_non_trainable, losses)


def phase(model, training):
    """The keyword arguments that set the phase, as Keras' trainer passes them:
    `training` only to a call() that takes it."""
    takes = "training" in getattr(model, "call_signature_parameters", ("training",))
    return {"training": training} if takes else {}
