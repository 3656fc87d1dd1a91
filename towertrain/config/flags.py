"""absl flags with tf_cnn_benchmarks' names and meanings, and Params from them.

The flags, their --help groups and the training-only set are generated from
towertrain.config.settings (one definition per setting).

Params checks what any caller gets wrong; this module adds the checks that
need the command line itself: a flag given explicitly (FLAGS[name].present)
that its combination would ignore, even when its value equals the default.
"""
from absl import flags

from towertrain.config import declare
from towertrain.config import mode_checks
from towertrain.config import params as params_lib
from towertrain.config import settings
from towertrain.config import tfcnn_checks, tfcnn_definitions

FLAGS = flags.FLAGS

# Generated from towertrain.config.settings, where each setting is defined once.
# --help shows towertrain's flags in these groups, in this order.
GROUPS = settings.groups()
# Flags --eval never reads (evaluation restores a checkpoint and runs the model
# once over the eval set): given explicitly with --eval, each is an error.
TRAINING_ONLY = settings.training_only()

_DEFINE = {settings.STRING: flags.DEFINE_string, settings.INTEGER: flags.DEFINE_integer,
           settings.FLOAT: flags.DEFINE_float, settings.BOOLEAN: flags.DEFINE_boolean}


def define_flags():
    """Defines the flags once per process (absl flags are global): one per
    setting, with its name, type, default, choices and help."""
    if "variable_update" in FLAGS:
        return
    for setting in settings.SETTINGS:
        if setting.type == settings.ENUM:
            flags.DEFINE_flag(flags.EnumFlag(setting.name, setting.default, setting.help,
                                             setting.choices,
                                             case_sensitive=setting.case_sensitive),
                              FLAGS)
        elif setting.words:
            flags.DEFINE(NumberOrWordParser(setting.words), setting.name, setting.default,
                         setting.help)
        else:
            _DEFINE[setting.type](setting.name, setting.default, setting.help)
    # tf_cnn_benchmarks' flags towertrain accepts with one value or refuses.
    tfcnn_definitions.define(FLAGS)


class NumberOrWordParser(flags.FloatParser):
    """A float flag that also takes a few words (Setting.words: --gradient_pack_mb=auto)."""

    def __init__(self, words):
        super().__init__()
        self.words = tuple(words)
        self.syntactic_help = f"a number or {' or '.join(self.words)}"

    def parse(self, argument):
        if isinstance(argument, str) and argument.strip() in self.words:
            return argument.strip()
        try:
            return super().parse(argument)
        except ValueError:  # absl prefixes '--flag=value: '
            raise ValueError(f"must be {self.syntactic_help}") from None

    def flag_type(self):
        return f"float or {' or '.join(self.words)}"


def explicit_flags():
    """Names of the flags given on the command line (default-valued ones too)."""
    return {name for name in params_lib.Params.__dataclass_fields__
            if name in FLAGS and FLAGS[name].present}


def params_from_flags():
    """A Params from parsed flags; raises ParamsError naming the bad flag."""
    tfcnn_checks.forget_unset_spellings(FLAGS)  # --batch_size=0 etc.: as if not given
    tfcnn_checks.map_cifar10_model_names(FLAGS)
    tfcnn_checks.check_refused(FLAGS)
    tfcnn_checks.check_forward_only(FLAGS, settings.forward_only_refused())
    names = [field for field in params_lib.Params.__dataclass_fields__]
    params = params_lib.Params(**{name: FLAGS[name].value for name in names})
    check_command_line(params, explicit_flags())
    return params


def _fail(flag, value, message):
    raise params_lib.ParamsError(f"--{flag}={value}: {message}")


def check_command_line(p, explicit):
    """Raises ParamsError for an explicitly given flag that `p`'s combination
    ignores; the message names the flag first, then the one that overrides it."""
    if p.eval:
        for flag in TRAINING_ONLY:
            if flag in explicit:
                _fail(flag, getattr(p, flag), "only applies to training; --eval ignores it")
        if "batch_size" in explicit and p.eval_batch_size is not None:
            _fail("batch_size", p.batch_size, f"--eval uses --eval_batch_size="
                  f"{p.eval_batch_size} instead; drop one")
    # Given explicitly with a mode that ignores it (Setting.applies_with), even
    # at its default value.
    mode_checks.check(p, _fail, explicit)
    declare.refuse_given(settings.SECTIONS, p, explicit, _fail)
