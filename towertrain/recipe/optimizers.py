"""--optimizer and its options -> Keras optimizers.

Gradient clipping is not done here: Keras' clipnorm/clipvalue would clip each
optimizer's group of variables on its own (one group per parameter device),
so towertrain.recipe.gradients clips the whole gradient before any optimizer sees it.
"""
import keras


def make_optimizer_factory(optimizer, learning_rate):
    """A zero-argument factory; managers call it once per variable group.

    learning_rate: a float or a keras LearningRateSchedule (towertrain.recipe.lr_schedule),
    which each optimizer calls with its own `iterations`, the global step.
    """
    p = optimizer
    builders = {
        "sgd": lambda: keras.optimizers.SGD(learning_rate),
        "momentum": lambda: keras.optimizers.SGD(learning_rate, momentum=p.momentum,
                                                 nesterov=p.nesterov),
        "rmsprop": lambda: keras.optimizers.RMSprop(
            learning_rate, rho=p.rmsprop_decay, momentum=p.rmsprop_momentum,
            epsilon=p.rmsprop_epsilon),
        "adam": lambda: keras.optimizers.Adam(
            learning_rate, beta_1=p.adam_beta1, beta_2=p.adam_beta2, epsilon=p.adam_epsilon),
    }
    try:
        return builders[p.optimizer]
    except KeyError:
        raise ValueError(f"unknown optimizer {p.optimizer!r}; known: "
                         f"{', '.join(builders)}") from None


def describe(optimizer):
    """The optimizer and its options, for the run's header."""
    p = optimizer
    if p.optimizer == "momentum":
        return f"momentum {p.momentum:g}" + (" (nesterov)" if p.nesterov else "")
    if p.optimizer == "rmsprop":
        return (f"rmsprop (decay {p.rmsprop_decay:g}, momentum {p.rmsprop_momentum:g}, "
                f"epsilon {p.rmsprop_epsilon:g})")
    if p.optimizer == "adam":
        return (f"adam (beta1 {p.adam_beta1:g}, beta2 {p.adam_beta2:g}, "
                f"epsilon {p.adam_epsilon:g})")
    return p.optimizer
