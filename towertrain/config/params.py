"""Params: the one frozen description of a run.

The CLI builds it from absl flags; library users build it directly. Its
fields are the settings each component declares beside its reader
(towertrain.config.settings collects them); Params runs every section's
checks and the few that span sections (here, cluster_checks, mode_checks), so
both paths report the same message, which always starts with the flag at
fault (`--num_gpus=8: ...`).
"""
import dataclasses
import numbers
import os
from typing import Optional

from towertrain.config import cluster_checks as params_cluster
from towertrain.config import declare, machine
from towertrain.config import mode_checks
from towertrain.config import slurm_gpus
from towertrain.config import settings
from towertrain.engine import exchange_settings
from towertrain.engine.process import settings as process_settings
from towertrain.models import catalog  # the models' names, without Keras
# The enum settings' choices: the flags offer the same tuples Params checks.
from towertrain.config.settings import (  # noqa: F401 - also read as params.VARIABLE_UPDATES
    ALL_REDUCE_SPECS, DATA_FORMATS, DATA_NAMES, DEVICES, INPUTS, OPTIMIZERS, VARIABLE_UPDATES)
from towertrain.errors import ParamsError  # noqa: F401 - raised here

DEFAULT_NUM_BATCHES = 100


@dataclasses.dataclass(frozen=True)
@settings.declare_fields()
class Params:
    """The run's settings: a frozen dataclass whose fields are the command
    line's flags, with the same names, values and defaults (docs/flags.md lists
    every one). Params(...) checks itself as the command line does and raises
    ParamsError with the same one-line message; replace(**changes) gives a
    changed copy.
    """
    # The fields, their types and defaults come from towertrain.config.settings
    # (the sections' declarations, shared with the flags); so do their checks.

    def __post_init__(self):
        for name in settings.PATH_SETTINGS:  # '~/run' is the home's run, never ./~/run
            object.__setattr__(self, name, settings.expand_path(getattr(self, name)))
        validate(self)

    def replace(self, **changes) -> "Params":
        return dataclasses.replace(self, **changes)

    # Resolved values: defaults that depend on other fields or on the machine.

    @property
    def resolved_num_batches(self) -> int:
        # None (not 100) as the field's default tells "not given" apart, so
        # --num_batches with --num_epochs is an error rather than ignored.
        return DEFAULT_NUM_BATCHES if self.num_batches is None else self.num_batches

    @property
    def resolved_model(self) -> str:
        """--model, or the registry's default model when not given."""
        if self.model is not None:
            return self.model
        return catalog.DEFAULT_MODEL

    @property
    def resolved_device(self) -> str:
        if self.device is not None:
            return self.device
        return machine.probe().default_device

    @property
    def resolved_data_format(self) -> str:
        if self.data_format is not None:
            return self.data_format
        return "NCHW" if self.resolved_device == "gpu" else "NHWC"

    @property
    def resolved_parameter_device(self) -> str:
        return self.local_parameter_device or self.resolved_device

    @property
    def resolved_all_reduce_spec(self) -> Optional[str]:
        """The exchange of replicated or collective_all_reduce (None for the others)."""
        device = self.resolved_device
        return declare.take(exchange_settings.ExchangeSettings, self).spec_on(
            device, self._splits_one_gpu(device), self.collective_implementation)

    def _splits_one_gpu(self, device) -> bool:
        """The towers are logical GPUs of this machine's one GPU (as the
        plan's devices split it)."""
        towers = declare.take(process_settings.Devices, self).tower_count()
        return device == "gpu" and towers > 1 and machine.probe().gpus == 1


_TRAINING_ONLY_UNSET = tuple(s.name for s in settings.params_settings()
                             if s.training_only and s.default is None)


def _fail(flag, value, message):
    raise ParamsError(f"--{flag}={value}: {message}")


def _check_choice(params, flag, choices):
    value = getattr(params, flag)
    if value is not None and value not in choices:
        _fail(flag, value, f"must be one of {', '.join(choices)}")


def validate(p: Params) -> None:
    """Raises ParamsError naming the first bad flag; checks run before any work."""
    _check_types(p)
    for setting in settings.params_settings():  # every enum, against its choices
        if setting.choices is not None:
            _check_choice(p, setting.name, setting.choices)
    # Before any check asks TensorFlow for devices (an unset --device is the
    # machine's): CUDA reads CUDA_VISIBLE_DEVICES once, at the first probe.
    slurm_gpus.claim(p)
    # --eval's refusal of what only training reads first: it names the cause
    # (evaluating) rather than a training check the value would have failed.
    _validate_eval_against_training(p)
    declare.refuse(settings.SECTIONS, p, _fail)  # each section's own checks
    params_cluster.validate_cluster(p, _fail)
    device = p.resolved_device
    # Flags their mode ignores (Setting.applies_with), one check for all of them.
    mode_checks.check(p, _fail)
    exchange_settings.validate_exchange(p, device, _fail)


INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1

_TYPE_WORDS = {settings.INTEGER: "an integer", settings.FLOAT: "a number",
               settings.BOOLEAN: "True or False", settings.STRING: "a string",
               settings.ENUM: "a string"}


def _check_types(p: Params) -> None:
    """Params(num_gpus="2") fails here, naming the field, rather than as a
    TypeError from a comparison further on."""
    for setting in settings.params_settings():
        value = getattr(p, setting.name)
        if value is None and setting.default is None:
            continue
        kind = setting.type
        if kind == settings.INTEGER:
            ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        elif kind == settings.FLOAT:
            ok = (isinstance(value, numbers.Real) and not isinstance(value, bool)
                  or value in setting.words)
        elif kind == settings.BOOLEAN:
            ok = isinstance(value, bool)
        elif kind == settings.STRING:  # a path may be a pathlib.Path
            ok = isinstance(value, (str, os.PathLike))
        else:
            ok = isinstance(value, str)
        if not ok:
            words = "".join(f" or {word!r}" for word in setting.words)
            _fail(setting.name, repr(value), f"must be {_TYPE_WORDS[kind]}{words} (got "
                  f"{type(value).__name__})")
        if kind == settings.INTEGER and not INT64_MIN <= value <= INT64_MAX:
            # TensorFlow holds every count in an int64: beyond it a value fails
            # deep inside a conversion instead of here.
            _fail(setting.name, value, f"out of range; an integer flag takes "
                  f"{INT64_MIN} .. {INT64_MAX} (a 64-bit integer)")


def _validate_eval_against_training(p: Params) -> None:
    if p.eval:
        # Evaluation restores a checkpoint and reads the eval set once: these
        # would be ignored. Here only those unset by default (None) can be told
        # apart from "not given"; the command line also refuses the others when
        # given explicitly (towertrain.config.flags.check_command_line).
        for flag in _TRAINING_ONLY_UNSET:
            if getattr(p, flag) is not None:
                _fail(flag, getattr(p, flag), "only applies to training; --eval ignores it")
    every = p.eval_during_training_every_n_steps
    if every and p.num_epochs is None and every > p.num_warmup_batches + p.resolved_num_batches:
        _fail("eval_during_training_every_n_steps", every, "no evaluation would run: the run "
              f"has {p.num_warmup_batches + p.resolved_num_batches} steps "
              "(--num_warmup_batches + --num_batches)")
