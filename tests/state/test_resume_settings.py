"""A resume that would change the saved state's meaning is refused before any
step: the command line names the setting, both values and
the way out, exits 2, leaves the checkpoint as it was, and the plain resume
from it still equals an uninterrupted run. What may change by design (the
step count, accumulation) is reported in the header instead."""

import numpy as np
import pytest

from towertrain.engine.exchange_settings import Exchange
from towertrain.plan import sections
from towertrain.state import run_record
from towertrain.state.resume import contract
from towertrain.state.checkpoint import CheckpointError

from helpers.checkpoint_files import files_of, saved_tensors
from helpers import refusals
from helpers.cli import run_cases

COMMON = ["--model=trivial", "--device=cpu", "--batch_size=2", "--num_warmup_batches=0",
          "--display_every=100", "--optimizer=momentum"]






@pytest.mark.slow
def test_resume_with_another_optimizer_is_refused_and_the_checkpoint_resumes_exactly(tmp_path):
    run, reference = str(tmp_path / "run"), str(tmp_path / "reference")
    [(code, _, err)] = run_cases("train", [[*COMMON, "--num_batches=3", f"--train_dir={run}"]],
                                 tmp_path / "first.json")
    assert code == 0, err
    before = files_of(run)

    [(code, out, err)] = run_cases(
        "train", [[*COMMON[:-1], "--optimizer=adam", "--num_batches=6", f"--train_dir={run}"]],
        tmp_path / "refused.json")
    assert code == 2 and out == "", out
    assert err == (f"towertrain: error: --optimizer=adam but --train_dir={run} was trained "
                   "with --optimizer=momentum, which shaped its saved state (a resume would "
                   "load it and train on as another run); pass --optimizer=momentum to resume "
                   "that run, or use another --train_dir to start a new one\n")
    assert files_of(run) == before  # nothing written, the record included

    (code, out, err), (ref_code, _, ref_err) = run_cases("train", [
        [*COMMON, "--num_batches=6", f"--train_dir={run}"],
        [*COMMON, "--num_batches=6", f"--train_dir={reference}"]], tmp_path / "resumed.json")
    assert (code, ref_code) == (0, 0), err + ref_err
    # The step count may change by design: said in the header, not refused.
    assert ("Total steps: CHANGED at resume: the run's last step was 3 in the run record, "
            "now 6") in out
    resumed, uninterrupted = saved_tensors(run), saved_tensors(reference)
    assert sorted(resumed) == sorted(uninterrupted) and any("slots/" in k for k in resumed)
    for name in resumed:
        np.testing.assert_allclose(resumed[name], uninterrupted[name], rtol=0, atol=1e-6,
                                   err_msg=name)


def test_a_float32_run_resumed_with_use_bf16_is_refused(tmp_path, capsys):
    """One setting of the record's precision, through the command line in this
    process; every setting alone: test_record_fields.py."""
    run = str(tmp_path / "run")
    common = [*COMMON, "--allow_emulated_precision", f"--train_dir={run}"]
    assert refusals.run_cli([*common, "--num_batches=1"], capsys)[0] == 0
    before = files_of(run)
    status, err = refusals.run_cli([*common, "--use_bf16", "--num_batches=2"], capsys)
    assert (status, err) == (2, (
        f"towertrain: error: --use_bf16 but --train_dir={run} was trained with --nouse_bf16, "
        "which shaped its saved state (a resume would load it and train on as another run); "
        "pass --nouse_bf16 to resume that run, or use another --train_dir to start a new "
        "one\n"))
    assert files_of(run) == before


@pytest.mark.parametrize("resumed_with, message", [
    (["--compact_transfer_dtype=bfloat16"],
     "--compact_transfer_dtype=bfloat16 but {where} was trained with "
     "--compact_transfer_dtype=float16, which shaped its saved state (a resume would load it "
     "and train on as another run); pass --compact_transfer_dtype=float16 to resume that "
     "run, or use another --train_dir to start a new one\n"),
    (["--nocompact_gradient_transfer"],
     "--nocompact_gradient_transfer but {where} was trained with "
     "--compact_gradient_transfer, which shaped its saved state (a resume would load it "
     "and train on as another run); pass --compact_gradient_transfer to resume that run, "
     "or use another --train_dir to start a new one\n"),
], ids=["float16-to-bfloat16", "off"])
def test_a_resume_that_changes_the_wire_precision_is_refused(resumed_with, message, tmp_path,
                                                            capsys):
    """The dtype the gradients were summed in (--compact_gradient_transfer,
    --compact_transfer_dtype) is the run's, as its compute precision is."""
    run = str(tmp_path / "run")
    common = [*COMMON, "--variable_update=replicated", "--num_gpus=2",
              f"--train_dir={run}"]
    first = refusals.run_cli([*common, "--compact_gradient_transfer", "--num_batches=1"],
                             capsys)
    assert first[0] == 0, first
    before = files_of(run)
    resumed = [*common, "--compact_gradient_transfer", "--num_batches=2"]
    if resumed_with == ["--nocompact_gradient_transfer"]:
        resumed.remove("--compact_gradient_transfer")
    status, err = refusals.run_cli([*resumed, *resumed_with], capsys)
    where = f"--train_dir={run}"
    assert (status, err) == (2, "towertrain: error: " + message.format(where=where))
    assert files_of(run) == before
    # The same wire resumes.
    assert refusals.run_cli([*common, "--compact_gradient_transfer",
                             "--compact_transfer_dtype=float16", "--num_batches=2"],
                            capsys)[0] == 0


OPTIMIZER = sections.Optimizer(optimizer="momentum", momentum=0.9, nesterov=False,
                               rmsprop_decay=0.9, rmsprop_momentum=0.9, rmsprop_epsilon=1e-10,
                               adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8)
PRECISION = sections.Precision()
LOSS = sections.Loss()


EXCHANGE = Exchange(variable_update="replicated", all_reduce_spec="pscpu")


def settings(optimizer=OPTIMIZER, precision=PRECISION, loss=LOSS, exchange=EXCHANGE):
    return run_record.state_settings(optimizer, precision, loss, exchange)


@pytest.mark.parametrize("changed, message", [
    (dict(optimizer=OPTIMIZER.__class__(**{**OPTIMIZER.__dict__, "momentum": 0.5})),
     "--momentum=0.5 but D was trained with --momentum=0.9"),
    (dict(optimizer=OPTIMIZER.__class__(**{**OPTIMIZER.__dict__, "nesterov": True})),
     "--nesterov but D was trained with --nonesterov"),
    (dict(precision=sections.Precision(use_fp16=True)),
     "--use_fp16 but D was trained with --nouse_fp16"),
    (dict(loss=sections.Loss(weight_decay=1e-4)),
     "--weight_decay=0.0001 but D was trained with --weight_decay=0.0"),
])
def test_each_setting_that_shapes_the_saved_state_is_refused(changed, message):
    with pytest.raises(CheckpointError, match=message.replace("+", r"\+")):
        contract.check_state_settings(settings(), settings(**changed), "D")


def test_options_that_do_not_apply_and_older_records_never_block_a_resume():
    # rmsprop's options mean nothing to a momentum run: not recorded, not checked.
    other_rmsprop = OPTIMIZER.__class__(**{**OPTIMIZER.__dict__, "rmsprop_decay": 0.5})
    contract.check_state_settings(settings(), settings(optimizer=other_rmsprop), "D")
    # A record written before the settings were recorded: nothing to compare.
    contract.check_state_settings({"model": "trivial"}, settings(), "D")
    adam = OPTIMIZER.__class__(**{**OPTIMIZER.__dict__, "optimizer": "adam"})
    assert "momentum" not in settings(optimizer=adam)
