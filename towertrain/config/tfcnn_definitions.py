"""absl flags for tf_cnn_benchmarks' flags that towertrain accepts with one
value (category 2) or refuses (category 3), generated from
towertrain.config.tfcnn_flags.

They parse as tf_cnn_benchmarks' did (a boolean takes --name / --noname), so
a tf_cnn_benchmarks command line reaches towertrain.config.tfcnn_checks, which
refuses what cannot apply with the table's one line. They are not Params
fields and stay out of --help (docs/migration.md lists them); --helpfull
shows them.
"""
from absl import flags

from towertrain.config import tfcnn_flags

_NUMBER_TYPES = {"integer": flags.DEFINE_integer, "float": flags.DEFINE_float}


def _help(flag):
    if flag.category == tfcnn_flags.REFUSED:
        return f"tf_cnn_benchmarks flag, refused: {flag.why}."
    return (f"tf_cnn_benchmarks flag: only {tfcnn_flags.spelled(flag, flag.accepted)} "
            f"(what towertrain always does); {flag.why}.")


def define(flag_values=flags.FLAGS):
    """Defines one absl flag per category-2/3 entry not yet defined.

    Category 2 defaults to its accepted value, so --help shows what towertrain
    does. Category 3 defaults to None: any value given is refused. Enums,
    strings and category-3 numbers are strings, so every value reaches the
    refusal (not absl's 'must be one of'/'must be an integer')."""
    for flag in tfcnn_flags.FLAGS:
        if flag.category == tfcnn_flags.IMPLEMENTED or flag.name in flag_values:
            continue
        default = flag.accepted if flag.category == tfcnn_flags.ACCEPTED_VALUE else None
        if flag.type == "boolean":
            flags.DEFINE_boolean(flag.name, default, _help(flag), flag_values=flag_values)
        elif flag.type in _NUMBER_TYPES and flag.category == tfcnn_flags.ACCEPTED_VALUE:
            _NUMBER_TYPES[flag.type](flag.name, default, _help(flag), flag_values=flag_values)
        else:
            flags.DEFINE_string(flag.name, None if default is None else str(default),
                                _help(flag), flag_values=flag_values)
