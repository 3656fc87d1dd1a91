"""--optimizer names -> Keras optimizers."""
import keras


def make_optimizer_factory(name, learning_rate, momentum=0.9):
    """A zero-argument factory; managers call it once per variable group."""
    builders = {
        "sgd": lambda: keras.optimizers.SGD(learning_rate),
        "momentum": lambda: keras.optimizers.SGD(learning_rate, momentum=momentum),
        "rmsprop": lambda: keras.optimizers.RMSprop(learning_rate, momentum=momentum),
        "adam": lambda: keras.optimizers.Adam(learning_rate),
    }
    try:
        return builders[name]
    except KeyError:
        raise ValueError(f"unknown optimizer {name!r}; known: {', '.join(builders)}") from None
