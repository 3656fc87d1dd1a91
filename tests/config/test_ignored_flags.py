"""Flags the rest of the command would ignore are errors, from lists derived
from the settings table (towertrain.config.settings): the flags a mode ignores
(`applies_with`) and the flags --eval refuses (`training_only`). Each list is
walked entry by entry, and cross-checked against a rule that does not read
the list (names, groups, help), so dropping an entry fails a test."""
import pytest

from towertrain import Params, ParamsError
from towertrain.config import flags as flags_lib
from towertrain.config import settings

BY_NAME = {s.name: s for s in settings.SETTINGS}
MODE_DEPENDENT = [s.name for s in settings.mode_dependent()]
TRAINING = "only applies to training; --eval ignores it"


def other_value(setting):
    """A valid value of `setting` that is not its default."""
    if setting.type == settings.ENUM:
        return next(c for c in setting.choices if c != setting.default and c != "nccl"
                    and c != "gpu")
    if setting.type == settings.BOOLEAN:
        return not setting.default
    if setting.type == settings.INTEGER:
        return 4 if setting.default is None else setting.default + 1
    return 0.5 if setting.default is None else setting.default * 0.5


def ignoring_mode(setting):
    """A value of the setting's mode that does not read it."""
    mode, allowed = setting.applies_with
    kind = BY_NAME[mode]
    if kind.type == settings.BOOLEAN:
        return False
    return next((c for c in kind.choices if c not in allowed), None)


def needed_for(name, kw):
    """kw plus the modes `name` (and each mode, in turn) needs to be read."""
    setting = BY_NAME[name]
    if setting.applies_with is not None:
        mode, allowed = setting.applies_with
        kw.setdefault(mode, allowed[0])
        needed_for(mode, kw)
    if name == "scale_learning_rate":
        kw.setdefault("base_batch_size", 8)
    return kw


def test_the_mode_dependent_flags_include_the_readme_s():
    assert {"local_parameter_device", "all_reduce_spec", "momentum", "nesterov",
            "compact_gradient_transfer"} <= set(MODE_DEPENDENT)


@pytest.mark.parametrize("name", MODE_DEPENDENT)
def test_a_flag_its_mode_ignores_is_an_error_naming_flag_and_mode(name):
    setting = BY_NAME[name]
    mode, allowed = setting.applies_with
    value, ignoring = other_value(setting), ignoring_mode(setting)
    # Read by its mode: accepted, through Params and the command line alike.
    kw = needed_for(name, {"device": "cpu", name: value})
    p = Params(**kw)
    flags_lib.check_command_line(p, set(kw))
    # Library entry point: a non-default value with a mode that ignores it.
    kw[mode] = ignoring
    with pytest.raises(ParamsError) as err:
        Params(**kw)
    message = str(err.value)
    assert message.startswith(f"--{name}={value}: only applies "), message
    assert f"--{mode}" in message, message
    if ignoring is not None and not isinstance(ignoring, bool):
        assert message.endswith(f"(got --{mode}={ignoring})"), message
    # Command line: given explicitly at its default value, still refused.
    kw.pop(name)
    with pytest.raises(ParamsError) as err:
        flags_lib.check_command_line(Params(**kw), {name})
    assert str(err.value).startswith(f"--{name}={setting.default}: only applies "), err.value


@pytest.mark.parametrize("name", [s.name for s in settings.SETTINGS])
def test_the_mode_rules_are_the_table_s(name):
    """Independent of the list: an optimizer's options (rmsprop_*, adam_*), the
    fp16 loss-scale options and every flag whose help says '<mode> only' or
    '(--optimizer=...)' are mode-dependent, each with that mode."""
    setting = BY_NAME[name]
    prefix = name.split("_")[0]
    expected = None
    if prefix in settings.OPTIMIZERS and name != "momentum" or "(--optimizer=" in setting.help:
        expected = ("optimizer", (prefix if prefix in settings.OPTIMIZERS else "momentum",))
    elif name.startswith("fp16_"):
        expected = (("fp16_enable_auto_loss_scale" if "inc" in name else "use_fp16"), (True,))
    for mode in settings.VARIABLE_UPDATES:
        if setting.help.startswith(f"{mode} only") or setting.help.endswith(f"; {mode} only."):
            expected = ("variable_update", (mode,))
    if name == "momentum":
        expected = ("optimizer", ("momentum",))
    if expected is not None:
        assert setting.applies_with == expected, (name, setting.applies_with)


# --eval: evaluation restores a checkpoint and runs the model once; nothing of
# the learning rate, the optimizer, or the step count is read.
NOT_READ_BY_EVAL_GROUPS = ("Training", "Learning rate", "Optimizer options")
READ_BY_EVAL = {"tf_random_seed"}  # synthetic eval data is generated from it


@pytest.mark.parametrize("name", [n for title, names in settings.groups()
                                  if title in NOT_READ_BY_EVAL_GROUPS for n in names
                                  if n not in READ_BY_EVAL])
def test_eval_refuses_every_flag_of_the_training_groups(tmp_path, name):
    """Walks the groups, not the derived list: a flag dropped from it fails here."""
    p = Params(eval=True, train_dir=str(tmp_path))
    with pytest.raises(ParamsError) as err:
        flags_lib.check_command_line(p, {name})
    assert str(err.value) == f"--{name}={getattr(p, name)}: {TRAINING}"


# The scaling command times training steps on synthetic data: it writes no
# summaries, traces or checkpoints and never evaluates.
@pytest.mark.parametrize("name", [n for title, names in settings.groups()
                                  if title in ("Summaries and traces",
                                               "Checkpoints and evaluation") for n in names])
def test_scaling_refuses_every_summary_trace_and_checkpoint_flag(name):
    from towertrain.commands import scaling
    from towertrain.config import params as params_lib
    flags_lib.define_flags()
    with pytest.raises(ParamsError, match=f"^--{name}=.*: not used by the scaling benchmark"):
        scaling._flag_checks(params_lib, {name})


# Settings with no Params field (command-line only, e.g. --forward_only) are
# not among flags_lib.explicit_flags(): the scaling command must still see them.
COMMAND_LINE_ONLY_NOT_USED = sorted(
    set(settings.for_scaling(settings.NOT_USED)) - set(Params.__dataclass_fields__))


def test_some_command_line_only_flag_is_not_used_by_scaling():
    assert "forward_only" in COMMAND_LINE_ONLY_NOT_USED


@pytest.mark.parametrize("name", COMMAND_LINE_ONLY_NOT_USED)
def test_scaling_command_refuses_a_command_line_only_flag_it_does_not_use(name, capsys):
    """Through scaling.main with parsed flags (what `python -m towertrain.scaling`
    runs): exit status 2 and the line naming the flag, before any timing."""
    from absl import flags
    from towertrain.commands import scaling
    own = [n for n in scaling.OWN_FLAGS if n not in flags.FLAGS]
    scaling.define_flags()
    value = other_value(BY_NAME[name])
    flags.FLAGS.unparse_flags()
    try:
        flags.FLAGS(["scaling", f"--{name}={value}"])
        status = scaling.main(["scaling"])
    finally:
        flags.FLAGS.unparse_flags()
        for flag_name in own:  # later tests' flag suggestions must not see them
            delattr(flags.FLAGS, flag_name)
    assert status == 2
    assert capsys.readouterr().err.strip() == (
        f"towertrain: error: --{name}={value}: not used by the scaling benchmark "
        "(it times training steps on synthetic data)")
