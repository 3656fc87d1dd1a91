"""How a setting is declared: a field of a frozen section dataclass that sits
beside the code that reads it.

    @declare.section("Optimizer options")
    class Clipping:
        gradient_clip: Optional[float] = declare.setting(
            None, "Clip every gradient element to [-value, value].",
            training_only=True, tfcnn=declare.tfcnn("float", None))

        def refuse(self, p, fail): ...   # its checks: fail(flag, value, message)

The field's annotation gives the setting's type (str with `choices` is an
enum), its default the flag's; the rest rides in the field's metadata.
towertrain.config.settings collects every section: Params' fields, the absl
flags, --help's groups, docs/flags.md, the tf_cnn_benchmarks table and the
run record's settings all come from these declarations.

A module that declares sections (a `settings.py` beside its reader) imports
only this module, towertrain.errors and other such modules, so the config
layer can collect them without TensorFlow.
"""
import dataclasses
import typing
from typing import Optional, Tuple

# Types: each names its absl DEFINE_<type> and the Python type of its Params field.
STRING, INTEGER, FLOAT, BOOLEAN, ENUM = "string", "integer", "float", "boolean", "enum"
PYTHON_TYPES = {STRING: str, INTEGER: int, FLOAT: float, BOOLEAN: bool, ENUM: str}
_KINDS = {str: STRING, int: INTEGER, float: FLOAT, bool: BOOLEAN}

# How `python -m towertrain.scaling` treats a setting: it reads it like
# training does, sets it itself for each configuration, or never uses it
# (it times steps on synthetic data). The last two are errors when given.
SHARED, PER_CONFIGURATION, NOT_USED = "shared", "set per configuration", "not used"

# Whether the run record keeps a setting (towertrain.state.run_record): the
# settings that shape the saved state, checked at a resume. WHEN_APPLIES: only
# when its mode applies (`applies_with`), ALWAYS: whatever the mode.
ALWAYS, WHEN_APPLIES = "always", "when it applies"
# COMPARED: kept and compared at a resume, a change said in the header as
# CHANGED (the run trains on as another trajectory from there): what shapes
# the updates but not the saved state's meaning (the augmentation, clipping).
COMPARED = "compared"

_META = "towertrain_setting"


@dataclasses.dataclass(frozen=True)
class TfCnn:
    """What tf_cnn_benchmarks' flag of the same name was there, where
    towertrain implements it (category 1 of towertrain.config.tfcnn_flags)."""
    type: str  # its DEFINE_<type> there: string, integer, float, boolean, enum, list
    default: object
    note: str = ""  # what differs in towertrain
    # Its default (0, '' or []) meant "unset" there: spelled out, taken as not given.
    unset: bool = False
    values: Optional[Tuple[str, ...]] = None  # an enum's choices there
    # {value: why}: a value of its choices there that towertrain refuses, and why.
    refused_values: Tuple[Tuple[str, str], ...] = ()


def tfcnn(type_, default, note="", **more):
    return TfCnn(type_, default, note, **more)


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    type: str  # STRING, INTEGER, FLOAT, BOOLEAN or ENUM
    default: object
    help: str
    choices: Optional[Tuple[str, ...]] = None  # ENUM only
    training_only: bool = False  # --eval refuses it (evaluation never reads it)
    scaling: str = SHARED
    param: bool = True  # False: a command-line-only flag, no Params field
    group: str = ""  # the --help group
    # (mode setting, values): only those values of the mode read this setting;
    # given with another, it is an error (towertrain.config.mode_checks).
    applies_with: Optional[Tuple[str, Tuple[object, ...]]] = None
    # ENUM only: the flag also takes its values in other case (tf_cnn_benchmarks'
    # --device=GPU); the parsed value is always the listed spelling.
    case_sensitive: bool = True
    # FLOAT only: words the flag takes besides numbers (--gradient_pack_mb=auto);
    # the Params field holds the word as given.
    words: Tuple[str, ...] = ()
    tfcnn: Optional[TfCnn] = None  # tf_cnn_benchmarks' flag of this name
    recorded: Optional[str] = None  # ALWAYS / WHEN_APPLIES: the run record keeps it
    path: bool = False  # names a file or directory: `~` is the user's home
    # --forward_only (an inference benchmark): True: it reads this training
    # setting; False: it refuses it (it writes or evaluates); None: it refuses
    # it if training_only.
    forward_only: Optional[bool] = None

    def __post_init__(self):
        # A malformed entry fails on import, naming itself.
        if self.type not in PYTHON_TYPES:
            raise ValueError(f"setting {self.name}: unknown type {self.type!r}")
        if (self.type == ENUM) != (self.choices is not None):
            raise ValueError(f"setting {self.name}: choices go with type ENUM, and only there")
        if not self.case_sensitive and self.type != ENUM:
            raise ValueError(f"setting {self.name}: case_sensitive=False is for ENUM only")
        if self.words and self.type != FLOAT:
            raise ValueError(f"setting {self.name}: words are for FLOAT only")
        if self.scaling not in (SHARED, PER_CONFIGURATION, NOT_USED):
            raise ValueError(f"setting {self.name}: unknown scaling {self.scaling!r}")
        if self.applies_with is not None and (
                len(self.applies_with) != 2 or not isinstance(self.applies_with[1], tuple)):
            raise ValueError(f"setting {self.name}: applies_with is (mode name, (values, ...))")
        if self.recorded not in (None, ALWAYS, WHEN_APPLIES, COMPARED):
            raise ValueError(f"setting {self.name}: unknown recorded {self.recorded!r}")

    @property
    def python_type(self):
        """The Params field's annotation: Optional[...] when the default is None."""
        base = PYTHON_TYPES[self.type]
        return base if self.default is not None else Optional[base]


def setting(default, help, **metadata):
    """A section field that is a setting: its default and --help text, and any
    of Setting's other attributes (choices, training_only, scaling, param,
    group, applies_with, case_sensitive, words, tfcnn, recorded, path)."""
    unknown = set(metadata) - {f.name for f in dataclasses.fields(Setting)}
    if unknown:
        raise TypeError(f"setting(): unknown {sorted(unknown)}")
    return dataclasses.field(default=default, metadata={_META: dict(help=help, **metadata)})


def section(group):
    """A class decorator: the class becomes a frozen dataclass whose setting
    fields show under the --help group `group` (a field's `group` overrides it)."""
    def make(cls):
        cls = dataclasses.dataclass(frozen=True)(cls)
        cls.__settings_group__ = group
        return cls
    return make


def settings_of(cls):
    """The Setting of each of the section's setting fields, in field order."""
    hints = typing.get_type_hints(cls)
    found = []
    for field in dataclasses.fields(cls):
        if _META not in field.metadata:
            continue
        meta = dict(field.metadata[_META])
        meta.setdefault("group", cls.__settings_group__)
        kind = ENUM if meta.get("choices") is not None else _kind(hints[field.name], field.name)
        found.append(Setting(field.name, kind, field.default, **meta))
    return tuple(found)


def _kind(annotation, name):
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    base = args[0] if typing.get_origin(annotation) is typing.Union and len(args) == 1 \
        else annotation
    if base not in _KINDS:
        raise TypeError(f"setting {name}: no flag type for {annotation!r}")
    return _KINDS[base]


def take(cls, values, **given):
    """A section whose fields not in `given` are `values`' attributes of the
    same name (a Params, or another section)."""
    names = {f.name for f in dataclasses.fields(cls)} - set(given)
    return cls(**given, **{name: getattr(values, name) for name in names})


def refuse(sections, p, fail):
    """Runs each section's own refusals (its `refuse(p, fail)`), in order."""
    for cls in sections:
        check = getattr(cls, "refuse", None)
        if check is not None:
            check(p, fail)


def refuse_given(sections, p, explicit, fail):
    """Runs each section's refusals of flags given on the command line
    (`explicit`: the names given) that `p` would ignore (`refuse_given`)."""
    for cls in sections:
        check = getattr(cls, "refuse_given", None)
        if check is not None:
            check(p, explicit, fail)
