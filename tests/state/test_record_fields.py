"""Every field of a record a resume compares has a case that changes it alone,
generated from the record's own field list: the run record's state settings
(run_record.STATE_SETTINGS) and recorded flags (RECORDED_FLAGS), what a
resume may change (CHANGEABLE), the training input's record
(training_input's keys) and the checkpoint's topology (topology.NAMES). A
field added to one of those lists without a case here fails its row; a check
that compares some fields and not others fails the row of the others."""
import os

import pytest

from towertrain import Params
from towertrain.state import run_record
from towertrain.state.resume import contract, topology as topology_lib
from towertrain.state.checkpoint import CheckpointError

from helpers import plans
from helpers.cifar_files import write_dataset

# Per state setting: (flags of the recorded run, the one flag the resume changes),
# as Params keywords. A setting recorded only where it applies (an optimizer's
# options, the loss scale's under --use_fp16) is changed on a run where it does.
BASE = dict(model="trivial", device="cpu", optimizer="momentum")
FP16 = dict(use_fp16=True, allow_emulated_precision=True)
SETTING_CASES = {
    "optimizer": ({}, dict(optimizer="sgd")),
    "momentum": ({}, dict(momentum=0.5)),
    "nesterov": ({}, dict(nesterov=True)),
    "rmsprop_decay": (dict(optimizer="rmsprop"), dict(rmsprop_decay=0.5)),
    "rmsprop_momentum": (dict(optimizer="rmsprop"), dict(rmsprop_momentum=0.5)),
    "rmsprop_epsilon": (dict(optimizer="rmsprop"), dict(rmsprop_epsilon=0.5)),
    "adam_beta1": (dict(optimizer="adam"), dict(adam_beta1=0.5)),
    "adam_beta2": (dict(optimizer="adam"), dict(adam_beta2=0.5)),
    "adam_epsilon": (dict(optimizer="adam"), dict(adam_epsilon=0.5)),
    "use_fp16": (dict(allow_emulated_precision=True), dict(use_fp16=True)),
    "use_bf16": (dict(allow_emulated_precision=True), dict(use_bf16=True)),
    "fp16_vars": (FP16, dict(fp16_vars=True)),
    "fp16_loss_scale": (FP16, dict(fp16_loss_scale=64.0)),
    "fp16_enable_auto_loss_scale": (FP16, dict(fp16_enable_auto_loss_scale=True)),
    "fp16_inc_loss_scale_every_n": (dict(FP16, fp16_enable_auto_loss_scale=True),
                                    dict(fp16_inc_loss_scale_every_n=7)),
    "weight_decay": ({}, dict(weight_decay=1e-4)),
    "compact_gradient_transfer": (dict(variable_update="replicated"),
                                  dict(compact_gradient_transfer=True)),
    "compact_transfer_dtype": (dict(variable_update="replicated",
                                    compact_gradient_transfer=True),
                               dict(compact_transfer_dtype="bfloat16")),
}


def _flag(name, value):
    if isinstance(value, bool):
        return f"--{name}" if value else f"--no{name}"
    return f"--{name}={value}"


def _state(**kw):
    return run_record.plan_state_settings(plans.run_plan(Params(**{**BASE, **kw})))


@pytest.mark.parametrize("name", run_record.STATE_SETTINGS)
def test_each_state_setting_changed_alone_is_refused(name):
    assert name in SETTING_CASES, f"no case changes the state setting {name!r} alone"
    base, change = SETTING_CASES[name]
    recorded, resuming = _state(**base), _state(**base, **change)
    # Alone: of the settings both record, only this one differs (another
    # optimizer records other options: those are not compared).
    assert {k for k in recorded if k in resuming and recorded[k] != resuming[k]} == {name}
    with pytest.raises(CheckpointError) as refused:
        contract.check_state_settings(recorded, resuming, "D")
    assert str(refused.value).startswith(
        f"{_flag(name, resuming[name])} but D was trained with {_flag(name, recorded[name])}, "
        "which shaped its saved state"), str(refused.value)
    contract.check_state_settings(recorded, _state(**base), "D")  # unchanged: resumes


RECORD = {"model": "trivial", "data_name": "cifar10"}
FLAG_CHANGES = {"model": "resnet20", "data_name": "imagenet"}


@pytest.mark.parametrize("name", run_record.RECORDED_FLAGS)
def test_each_recorded_flag_changed_alone_is_refused(name):
    assert name in FLAG_CHANGES, f"no case changes the recorded flag {name!r} alone"
    run_record.check(RECORD, dict(RECORD), "D")
    with pytest.raises(CheckpointError, match=f"^--{name}={FLAG_CHANGES[name]} but D was "
                                              f"trained with --{name}={RECORD[name]};"):
        run_record.check(RECORD, {**RECORD, name: FLAG_CHANGES[name]}, "D")


CHANGEABLE_RECORD = {"accumulation_steps": 1, "total_steps": 10}
CHANGEABLE_TEXT = {"accumulation_steps": "Accumulation: CHANGED at resume: "
                                         "--gradient_accumulation_steps was 1",
                   "total_steps": "Total steps: CHANGED at resume: the run's last step was 10"}


@pytest.mark.parametrize("name", run_record.CHANGEABLE)
def test_each_changeable_value_changed_alone_is_reported(name):
    assert name in CHANGEABLE_TEXT, f"no case changes {name!r} alone"
    assert contract.changes_at_resume(CHANGEABLE_RECORD, dict(CHANGEABLE_RECORD)) == []
    lines = contract.changes_at_resume(CHANGEABLE_RECORD,
                                         {**CHANGEABLE_RECORD, name: 3})
    assert [f"{label}: {text}" for label, text in lines] == [
        f"{CHANGEABLE_TEXT[name]} in the run record, now 3"]


def _rename_last(names):
    return [*names[:-1], "data_batch_9.bin"]


INPUT_CHANGES = {"input_examples": lambda count: count - 8, "input_files": _rename_last}


@pytest.fixture(scope="module")
def input_record(tmp_path_factory):
    data_dir = write_dataset(str(tmp_path_factory.mktemp("cifar")), num_train=40, num_test=8,
                             train_files=5)
    return run_record.training_input("cifar10", data_dir, 40)


def test_each_input_field_changed_alone_is_refused(input_record):
    assert sorted(input_record) == sorted(INPUT_CHANGES), (
        "a field of the input record without a case here (or a case without its field)")
    contract.check_training_input(input_record, dict(input_record), "/d", "D")
    for name, change in INPUT_CHANGES.items():
        changed = {**input_record, name: change(input_record[name])}
        with pytest.raises(CheckpointError, match="^--data_dir=/d holds .* but D was trained"):
            contract.check_training_input(input_record, changed, "/d", "D")


# The topology a checkpoint records: each number changed alone is reported.
TOPOLOGY = dict(global_batch=8, workers=2, devices_per_worker=2)
TOPOLOGY_CHANGES = {
    "global_batch": (16, [("Topology", "checkpoint written by 2 worker(s) x 2 device(s), now "
                                       "2 x 2"),
                          ("Global batch", "CHANGED at resume: 16 in the checkpoint, now 8")]),
    "workers": (1, [("Topology", "checkpoint written by 1 worker(s) x 2 device(s), now 2 x 2; "
                                 "same global batch 8: continues exactly")]),
    "devices_per_worker": (4, [("Topology", "checkpoint written by 2 worker(s) x 4 device(s), "
                                            "now 2 x 2; same global batch 8: continues "
                                            "exactly")]),
}


@pytest.mark.parametrize("name", topology_lib.NAMES)
def test_each_topology_number_changed_alone_is_reported(name):
    assert sorted(TOPOLOGY) == sorted(topology_lib.NAMES)
    assert name in TOPOLOGY_CHANGES, f"no case changes the topology's {name!r} alone"
    value, expected = TOPOLOGY_CHANGES[name]
    topology = topology_lib.RecordedTopology(**TOPOLOGY)
    saved = dict(TOPOLOGY, **{name: value})
    for variable, field in zip(topology.variables().values(), topology_lib.NAMES):
        variable.assign(saved[field])  # what a restore of that checkpoint reads
    topology.after_restore()
    lines = topology.header_info()
    assert [(label, text.split("; the saved step count")[0]) for label, text in lines] == expected
    assert topology.batch_changed == (name == "global_batch")
