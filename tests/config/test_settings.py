"""Every setting is defined once (towertrain.config.settings): the Params field,
the absl flag, its --help group, whether --eval refuses it and how the scaling
command treats it all come from that one definition."""
import json
import os
import subprocess
import sys
import textwrap
from typing import Optional

import pytest
from absl import flags

from towertrain import Params, ParamsError
from towertrain.commands import scaling
from towertrain.config import flags as flags_lib
from towertrain.config import params as params_lib
from towertrain.config import settings

from helpers.cli import run_cases

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Flags of the command line that are no Params field.
COMMAND_LINE_ONLY = {"verbose", "forward_only"}
# The --help groups: titles and order as the CLI has always shown them.
TITLES = ["Model and data", "Devices and variables", "Training", "Learning rate",
          "Optimizer options", "Precision and speed", "Summaries and traces",
          "Checkpoints and evaluation", "Cluster", "Runtime and threads",
          "Input pipeline (--data_dir with --input=dataset)", "Output"]
FLAG_TYPES = {"string": str, "int": int, "float": float, "bool": bool}
TRAINING = "only applies to training; --eval ignores it"
NOT_USED = "not used by the scaling benchmark (it times training steps on synthetic data)"


def run(module, *args, cwd=ROOT, timeout=240):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # as a user
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, *args] if module is None else
                          [sys.executable, "-m", module, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def towertrain_flags():
    flags_lib.define_flags()
    return flags.FLAGS


def defined_by_towertrain(flag_values):
    """Names of the flags towertrain.config.flags defined (not absl's own)."""
    return {f.name for f in flag_values.get_flags_for_module("towertrain.config.flags")}


def python_type(flag):
    """The type a flag's values have (an enum flag's are strings)."""
    if getattr(flag.parser, "enum_values", None):
        return str
    return FLAG_TYPES[flag.flag_type().split(" or ")[0]]  # "float or auto": a float field


def test_every_params_field_is_a_flag_with_its_default_and_type(towertrain_flags):
    fields = Params.__dataclass_fields__
    for name, field in fields.items():
        assert name in towertrain_flags, f"Params.{name} has no flag --{name}"
        flag = towertrain_flags[name]
        assert flag.default == field.default, (name, flag.default, field.default)
        assert type(flag.default) is type(field.default), (name, flag.default, field.default)
        kind = python_type(flag)
        assert field.type == (kind if field.default is not None else Optional[kind]), (
            name, field.type, flag.flag_type())
    # ...and every towertrain flag is a Params field, but the command-line-only ones.
    extra = defined_by_towertrain(towertrain_flags) - set(fields)
    assert extra == COMMAND_LINE_ONLY, extra


def test_enum_flags_offer_exactly_the_values_params_accepts(towertrain_flags):
    enums = [n for n in Params.__dataclass_fields__
             if getattr(towertrain_flags[n].parser, "enum_values", None)]
    assert {"variable_update", "all_reduce_spec", "optimizer", "device", "data_format",
            "data_name", "input", "learning_rate_schedule", "scale_learning_rate"} <= set(enums)
    for name in enums:
        choices = towertrain_flags[name].parser.enum_values
        with pytest.raises(ParamsError) as err:
            Params(**{name: "nope"})
        assert str(err.value) == f"--{name}=nope: must be one of {', '.join(choices)}"
    assert towertrain_flags["variable_update"].parser.enum_values == list(
        params_lib.VARIABLE_UPDATES)


def test_groups_list_every_flag_exactly_once(towertrain_flags):
    assert [title for title, _ in flags_lib.GROUPS] == TITLES
    listed = [name for _, names in flags_lib.GROUPS for name in names]
    assert len(listed) == len(set(listed)), sorted(n for n in listed if listed.count(n) > 1)
    assert set(listed) == defined_by_towertrain(towertrain_flags)
    assert set(listed) == set(Params.__dataclass_fields__) | COMMAND_LINE_ONLY


def test_the_generated_names_are_the_tables():
    # The modules' lists are the generators' output for the one table.
    assert flags_lib.GROUPS == settings.groups()
    assert flags_lib.TRAINING_ONLY == settings.training_only()
    assert scaling.SET_PER_CONFIGURATION == settings.for_scaling(settings.PER_CONFIGURATION)
    assert scaling.NOT_USED == settings.for_scaling(settings.NOT_USED)
    assert list(Params.__dataclass_fields__) == [s.name for s in settings.params_settings()]


# Run in a fresh process: one definition changed (momentum) and one added
# (scratch_knob) in the table before anything reads it; everything else must follow.
CHANGED_TABLE = textwrap.dedent("""
    import dataclasses, json, sys
    from towertrain.config import settings
    table = list(settings.SETTINGS)
    at = [s.name for s in table].index("momentum")
    table[at] = dataclasses.replace(table[at], default=0.5, help="Scratch momentum.",
                                    group="Output", training_only=False,
                                    scaling=settings.NOT_USED)
    table.insert(at, settings.Setting("scratch_knob", settings.INTEGER, 3, "A scratch knob.",
                                      training_only=True, group="Training",
                                      scaling=settings.PER_CONFIGURATION))
    settings.SETTINGS = tuple(table)
    from absl import flags
    from towertrain.commands import scaling, train
    from towertrain.config import flags as flags_lib, params
    scaling.define_flags()
    F = flags.FLAGS
    fields = params.Params.__dataclass_fields__
    json.dump({
        "flags": {n: [F[n].flag_type(), F[n].default, F[n].help] for n in
                  ("scratch_knob", "momentum")},
        "fields": {n: [fields[n].default, str(fields[n].type)] for n in
                   ("scratch_knob", "momentum")},
        "params": [params.Params().scratch_knob, params.Params(scratch_knob=7).momentum],
        "groups": dict(flags_lib.GROUPS), "training_only": flags_lib.TRAINING_ONLY,
        "per_configuration": scaling.SET_PER_CONFIGURATION, "not_used": scaling.NOT_USED,
        "help": train.help_text(), "scaling_help": scaling.help_text()}, sys.stdout)
""")


@pytest.fixture(scope="module")
def changed():
    done = run(None, "-c", CHANGED_TABLE, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_one_changed_definition_changes_flag_field_group_and_lists_together(changed):
    assert changed["flags"]["momentum"] == ["float", 0.5, "Scratch momentum."]
    assert changed["fields"]["momentum"] == [0.5, "<class 'float'>"]
    assert "momentum" in changed["groups"]["Output"]
    assert "momentum" not in changed["groups"]["Training"]
    assert "momentum" not in changed["training_only"]
    assert "momentum" in changed["not_used"]
    help_text = changed["help"]
    assert help_text.index("  --momentum=0.5\n      Scratch momentum.") > help_text.index(
        "\nOutput:\n")
    assert "--momentum" not in changed["scaling_help"]  # not used: not offered


def test_one_new_definition_is_a_field_a_flag_and_in_every_list(changed):
    assert changed["flags"]["scratch_knob"] == ["int", 3, "A scratch knob."]
    assert changed["fields"]["scratch_knob"] == [3, "<class 'int'>"]
    assert changed["params"] == [3, 0.5]
    training = changed["groups"]["Training"]
    assert training[training.index("scratch_knob") + 1] == "init_learning_rate"  # where it sits
    assert "scratch_knob" in changed["training_only"]
    assert "scratch_knob" in changed["per_configuration"]
    assert "  --scratch_knob=3\n      A scratch knob." in changed["help"]
    assert "--scratch_knob" not in changed["scaling_help"]


def test_check_command_line_refuses_every_training_only_flag_with_eval(tmp_path):
    p = Params(eval=True, train_dir=str(tmp_path))
    for name in Params.__dataclass_fields__:
        try:
            flags_lib.check_command_line(p, {name})
            refused = None
        except ParamsError as err:
            refused = str(err)
        if name in settings.training_only():
            assert refused == f"--{name}={getattr(p, name)}: {TRAINING}", name
        else:  # other checks may refuse it, never as training-only
            assert refused is None or TRAINING not in refused, (name, refused)
    assert "sync_batch_norm" in settings.training_only()
    assert "eval_batch_size" not in settings.training_only()


def test_params_refuses_training_only_settings_that_are_set_with_eval(tmp_path):
    values = {settings.INTEGER: 5, settings.FLOAT: 0.5, settings.STRING: "0.1;1;0.01"}
    unset = [s for s in settings.params_settings() if s.training_only and s.default is None]
    assert {"num_batches", "gradient_clip", "save_model_steps"} <= {s.name for s in unset}
    for s in unset:
        value = s.choices[0] if s.choices else values[s.type]
        with pytest.raises(ParamsError) as err:
            Params(eval=True, train_dir=str(tmp_path), **{s.name: value})
        assert str(err.value) == f"--{s.name}={value}: {TRAINING}"


EVAL_REFUSED = [
    # Equal to its default, given explicitly: still refused (a command-line check).
    ("--nosync_batch_norm", f"--sync_batch_norm=False: {TRAINING}"),
    # Unset by default: refused by Params, for library users too.
    ("--num_batches=5", f"--num_batches=5: {TRAINING}"),
]
SCALING_REFUSED = [
    ("--variable_update=replicated", "--variable_update=replicated: set per configuration "
     "by the scaling benchmark; use --modes"),
    ("--trace_file=step.json", f"--trace_file=step.json: {NOT_USED}"),
]


@pytest.fixture(scope="module")
def refusals(tmp_path_factory):
    """Each command line above through its command's own entry, one process per
    command (helpers.cli.run_cases: each its own exit status and streams)."""
    cwd = tmp_path_factory.mktemp("refusals")
    eval_runs = run_cases("train", [["--eval", f"--train_dir={cwd}", "--device=cpu", flag]
                                    for flag, _ in EVAL_REFUSED], cwd / "eval.json", cwd=cwd)
    scaling_runs = run_cases("scaling", [["--device=cpu", flag] for flag, _ in SCALING_REFUSED],
                             cwd / "scaling.json", cwd=cwd)
    return dict(zip([flag for flag, _ in EVAL_REFUSED + SCALING_REFUSED],
                    eval_runs + scaling_runs))


@pytest.mark.parametrize("flag,message", EVAL_REFUSED)
def test_eval_refuses_training_only_flags_through_the_cli(refusals, flag, message):
    returncode, stdout, stderr = refusals[flag]
    assert returncode == 2, stderr[-2000:]
    assert stderr == f"towertrain: error: {message}\n"


@pytest.mark.parametrize("flag,message", SCALING_REFUSED)
def test_scaling_refuses_its_own_and_unused_flags(refusals, flag, message):
    returncode, stdout, stderr = refusals[flag]
    assert returncode == 2, stderr[-2000:]
    assert stderr == f"towertrain: error: {message}\n"
    assert stdout == ""


def test_scaling_refuses_every_flag_it_sets_or_never_uses(towertrain_flags):
    for name in scaling.SET_PER_CONFIGURATION + scaling.NOT_USED:
        with pytest.raises(ParamsError) as err:
            scaling._flag_checks(params_lib, {name})
        value = towertrain_flags[name].value
        assert str(err.value).startswith(f"--{name}={value}: "
                                         + ("set per configuration" if name in
                                            scaling.SET_PER_CONFIGURATION else NOT_USED))
    assert {"num_gpus", "variable_update"} <= set(scaling.SET_PER_CONFIGURATION)
    assert {"train_dir", "eval", "trace_file"} <= set(scaling.NOT_USED)


def test_scaling_help_offers_exactly_the_shared_flags(tmp_path):
    done = run("towertrain.scaling", "--help", cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    shared_part = done.stdout.split("Run flags shared with training")[1]
    offered = {word.strip(",")[2:] for word in shared_part.split() if word.startswith("--")}
    offered.discard("help")  # "python -m towertrain --help explains them"
    assert offered == set(settings.for_scaling(settings.SHARED))
    assert not offered & set(scaling.SET_PER_CONFIGURATION + scaling.NOT_USED)


def test_momentum_help_names_only_the_optimizer_it_applies_to():
    # --optimizer=rmsprop --momentum=0.5 is refused (rmsprop reads --rmsprop_momentum),
    # so the help must not offer --momentum for rmsprop.
    from towertrain.config import settings
    momentum = next(s for s in settings.SETTINGS if s.name == "momentum")
    assert "and rmsprop" not in momentum.help
    assert "--optimizer=momentum (rmsprop uses --rmsprop_momentum)" in momentum.help
