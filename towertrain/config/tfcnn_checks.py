"""tf_cnn_benchmarks' command lines, read as it reads them: its "unset"
defaults spelled out count as not given, --model=alexnet on cifar10 is its
CIFAR-10 AlexNet; refusals for its flags towertrain cannot honour, and the
checks of --forward_only (an inference benchmark: it trains and writes nothing).

Each refusal is one line naming the flag (towertrain.config.tfcnn_flags holds
the reasons); the command line turns the ParamsError into exit status 2.
"""
from towertrain.config import tfcnn_flags
from towertrain.errors import ParamsError



def unset_spellings():
    """{flag: tf_cnn_benchmarks' default as spelled here} for tfcnn_flags.UNSET_DEFAULTS."""
    return {name: tfcnn_flags.unset_spelling(tfcnn_flags.BY_NAME[name])
            for name in tfcnn_flags.UNSET_DEFAULTS}


def forget_unset_spellings(flag_values):
    """A tf_cnn_benchmarks line that spells out such a default means what
    leaving the flag out means: treat the flag as not given (absl's unparse),
    so no check takes it for a value the run would ignore."""
    for name, unset in unset_spellings().items():
        if name in flag_values and flag_values[name].present and \
                flag_values[name].value == unset:
            flag_values[name].unparse()


# tf_cnn_benchmarks picks a model by name and dataset; the one name whose
# CIFAR-10 network has another name in towertrain's registry.
CIFAR10_MODELS = {"alexnet": "alexnet_cifar"}


def map_cifar10_model_names(flag_values):
    """--model=alexnet --data_name=cifar10 builds tf_cnn_benchmarks' CIFAR-10
    AlexNet (alexnet_cifar), not the ImageNet one at 227x227."""
    if "model" not in flag_values or "data_name" not in flag_values:
        return
    name = flag_values["model"].value
    if flag_values["data_name"].value == "cifar10" and name in CIFAR10_MODELS:
        flag_values["model"].value = CIFAR10_MODELS[name]


def check_refused(flag_values):
    """Raises ParamsError for the first category-3 flag given on the command
    line, or category-2 flag given with another value than towertrain's."""
    for flag in tfcnn_flags.FLAGS:
        if flag.category == tfcnn_flags.IMPLEMENTED or flag.name not in flag_values:
            continue
        given = flag_values[flag.name]
        if not given.present:
            continue
        if flag.category == tfcnn_flags.REFUSED or not _same(given.value, flag.accepted):
            raise ParamsError(tfcnn_flags.refusal(flag, given.value))


def _same(given, accepted):
    return given == accepted or str(given) == str(accepted)


def check_forward_only(flag_values, never_read):
    """With --forward_only: raises ParamsError for an explicitly given flag it
    never reads (never_read: the settings' `forward_only`, collected)."""
    if "forward_only" not in flag_values or not flag_values.forward_only:
        return
    for name in never_read:
        if name in flag_values and flag_values[name].present:
            value = flag_values[name].value
            raise ParamsError(f"--{name}={value}: does not apply to --forward_only (an "
                              "inference benchmark that trains nothing and writes nothing); "
                              "drop it")
