"""Every setting of a run, collected from the sections that declare it
beside its reader (towertrain.config.declare): name, type, default, help,
--help group, whether --eval ignores it, which mode reads it, how the scaling
command treats it, its tf_cnn_benchmarks flag and whether the run record
keeps it.

Generated from the collected table: the fields of towertrain.Params
(`declare_fields`), the absl flags of `python -m towertrain`
(towertrain.config.flags), their --help groups (`groups`), the flags --eval
refuses (`training_only`), the flags a mode ignores (`mode_dependent`,
checked by towertrain.config.mode_checks), the scaling command's lists
(`for_scaling`), tf_cnn_benchmarks' implemented flags
(towertrain.config.tfcnn_flags) and the run record's (`recorded`). A new
setting is one field of the section its reader takes (docs/architecture.md,
"Adding a setting"); `_TABLE` below holds the command line's own flags.
"""
import os

from towertrain.config.declare import (  # noqa: F401 - the table's words, read as settings.X
    ALWAYS, BOOLEAN, COMPARED, ENUM, FLOAT, INTEGER, NOT_USED, PER_CONFIGURATION, PYTHON_TYPES, SHARED,
    STRING, WHEN_APPLIES, Setting, settings_of, tfcnn)
from towertrain.engine import exchange_settings
from towertrain.engine.distributed import settings as distributed_settings
from towertrain.engine.evaluation import settings as evaluation_settings
from towertrain.engine.feed import settings as feed_settings
from towertrain.engine.process import settings as process_settings
from towertrain.models import catalog  # the models' names, without Keras
from towertrain.engine.run import settings as run_settings
from towertrain.plan import settings as plan_settings
from towertrain.plan.learning_rate import settings as learning_rate_settings
from towertrain.recipe import settings as recipe_settings
from towertrain.state import settings as state_settings
# The enum settings' choices, declared with them; read here as settings.X too.
from towertrain.engine.exchange_settings import (  # noqa: F401
    ALL_REDUCE_SPECS, EXCHANGES, VARIABLE_CONSISTENCIES, VARIABLE_UPDATES)
from towertrain.engine.feed.settings import DATA_NAMES, INPUTS, RESIZE_METHODS  # noqa: F401
from towertrain.engine.process.settings import DATA_FORMATS, DEVICES  # noqa: F401
from towertrain.plan.learning_rate.settings import (  # noqa: F401
    LEARNING_RATE_SCALINGS, LEARNING_RATE_SCHEDULES)
from towertrain.recipe.settings import LOSS_TYPES, OPTIMIZERS  # noqa: F401

# The sections that declare settings, in the order their checks run; within a
# --help group their fields follow one another in this order.
SECTIONS = (plan_settings.ModelSettings, plan_settings.StepSettings,
            process_settings.Devices, exchange_settings.ExchangeSettings,
            recipe_settings.Optimizer, learning_rate_settings.LearningRateSettings,
            recipe_settings.Clipping, recipe_settings.Precision, recipe_settings.Loss,
            run_settings.Display, run_settings.Observe, state_settings.Checkpoints,
            evaluation_settings.Evaluation, distributed_settings.ClusterSettings,
            process_settings.ProcessSettings, feed_settings.InputSettings)

# The --help groups, in --help order.
GROUP_TITLES = ("Model and data", "Devices and variables", "Training", "Learning rate",
                "Optimizer options", "Precision and speed", "Summaries and traces",
                "Checkpoints and evaluation", "Cluster", "Runtime and threads",
                "Input pipeline (--data_dir with --input=dataset)", "Output")


def shown_default(name):
    """What --help and docs/flags.md show as the default of a training flag
    whose None means a value: --model's is the registry's default model."""
    if name == "model":
        return catalog.DEFAULT_MODEL
    return None


_TABLE = (
    # The command line's own flags: no Params field, read by the commands.
    Setting("forward_only", BOOLEAN, False, "Inference benchmark: time the forward "
            "pass (inference mode) on --num_batches batches and print images/sec; trains "
            "nothing and writes nothing.", param=False, scaling=NOT_USED,
            group="Checkpoints and evaluation",
            tfcnn=tfcnn("boolean", False, "an inference benchmark: trains nothing and "
                        "writes nothing; refuses the flags only training reads")),
    Setting("verbose", BOOLEAN, False, "Show TensorFlow's own log output (C++ notices "
            "such as oneDNN's, INFO logging from TensorFlow and Keras), hidden by "
            "default. TF_CPP_MIN_LOG_LEVEL=0 shows the C++ part only, --verbosity=0 the "
            "Python part only.", param=False, group="Output"),
)


def declared(sections=SECTIONS, table=_TABLE):
    """Every setting in declaration order: the table's rows, then each
    section's fields in SECTIONS order."""
    return tuple(table) + tuple(s for cls in sections for s in settings_of(cls))


def collect(sections=SECTIONS, table=_TABLE):
    """Every setting: the sections' fields and the table's rows, in --help
    group order (within a group: in declaration order). A name declared
    twice fails on import."""
    found = declared(sections, table)
    names = [s.name for s in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"settings declared twice: {twice}")
    unknown = sorted({s.group for s in found} - set(GROUP_TITLES))
    if unknown:
        raise ValueError(f"settings in unknown --help groups: {unknown}")
    return tuple(sorted(found, key=lambda s: GROUP_TITLES.index(s.group)))


# The table, in --help order. Params' fields follow the same order.
SETTINGS = collect()
# Each setting's place in declaration order (recorded settings are checked in it).
_DECLARATION_ORDER = {s.name: i for i, s in enumerate(declared())}

# Each generator reads `table`, SETTINGS unless given (a test's scratch table).

def params_settings(table=None):
    """The settings that are fields of Params (all but command-line-only ones)."""
    return tuple(s for s in _table(table) if s.param)


# The settings that name a file or directory: `~` in them is the user's home
# (Params expands it), also where no shell did (a config file, `--flag=~/x`).
PATH_SETTINGS = tuple(s.name for s in SETTINGS if s.path)


def expand_path(value):
    """`value` with a leading `~` expanded (other values as they are)."""
    return os.path.expanduser(value) if isinstance(value, str) and value.startswith("~") \
        else value


def groups(table=None):
    """(title, names) of each --help group, in order."""
    table = _table(table)
    titles = list(dict.fromkeys(s.group for s in table))
    return tuple((title, tuple(s.name for s in table if s.group == title)) for title in titles)


def training_only(table=None):
    """The names --eval refuses."""
    return tuple(s.name for s in _table(table) if s.training_only)


def forward_only_refused(table=None):
    """The names --forward_only refuses: what only training reads (but what
    it reads itself) and what writes or evaluates."""
    return tuple(s.name for s in _table(table) if s.forward_only is False or
                 (s.training_only and s.forward_only is None))


def mode_dependent(table=None):
    """The settings only some values of another setting read (`applies_with`)."""
    return tuple(s for s in _table(table) if s.applies_with is not None)


def for_scaling(treatment, table=None):
    """The names the scaling command treats as `treatment` (SHARED,
    PER_CONFIGURATION or NOT_USED)."""
    return tuple(s.name for s in _table(table) if s.scaling == treatment)


def recorded(table=None):
    """The settings the run record keeps (they shape the saved state: a resume
    that changes one is refused), in the order they are checked: declaration
    order, where a setting comes before the options it governs (a scratch
    table's own settings last)."""
    found = [s for s in _table(table) if s.recorded in (ALWAYS, WHEN_APPLIES)]
    last = len(_DECLARATION_ORDER)
    return tuple(sorted(found, key=lambda s: _DECLARATION_ORDER.get(s.name, last)))


def compared(table=None):
    """The settings the run record keeps and a resume compares, saying a change
    as CHANGED in the header (Setting.recorded COMPARED), in declaration order."""
    return tuple(s for s in (declared() if table is None else table)
                 if s.recorded == COMPARED)


def recorded_values(value_of, table=None):
    """{name: value} of the recorded settings that apply to a run, value_of(name)
    giving its value: an option of another mode (--momentum with adam, the loss
    scale without --use_fp16), or of a mode itself left out (the auto loss
    scale's period without --use_fp16), is left out, so it never blocks a resume."""
    names = {s.name for s in recorded(table)}
    values = {}
    for setting in recorded(table):
        if setting.recorded == WHEN_APPLIES and setting.applies_with is not None:
            mode, allowed = setting.applies_with
            if value_of(mode) not in allowed or (mode in names and mode not in values):
                continue
        values[setting.name] = value_of(setting.name)
    return values


def declare_fields(table=None):
    """A class decorator, applied before dataclasses.dataclass: gives the class
    one annotated field per Params setting, with its default."""
    def declare(cls):
        annotations = dict(cls.__dict__.get("__annotations__", {}))
        for setting in params_settings(table):
            if setting.name in cls.__dict__ or setting.name in annotations:
                raise TypeError(f"{cls.__name__}.{setting.name} is already defined; "
                                "settings come from towertrain.config.settings")
            annotations[setting.name] = setting.python_type
            setattr(cls, setting.name, setting.default)
        cls.__annotations__ = annotations
        return cls
    return declare


def _table(table):
    # Read at call time, so a table patched before the importers load is used.
    return SETTINGS if table is None else table
