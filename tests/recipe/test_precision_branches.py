"""Every branch that exists only under a half precision (--use_fp16,
--use_bf16, --fp16_vars, --compact_gradient_transfer, the loss scale) is
taken, both ways, by a training run, on a model without batch norm
(trivial) and on one with it (ckpt_tiny).

The family is found in the source (tests/helpers/precision_branches.py: a
condition that reads a half-precision setting or dtype), so a new branch
joins it by being written; a run records which way each went. A branch the
one-process runs cannot take (a refusal, a multi-worker decision, a save) is
listed below with the test that takes it; one that is neither taken nor
listed fails here."""
import json
import os
import re
import subprocess
import sys

import pytest

from helpers import precision_branches as family

REPO = family.REPO
REFUSALS = "tests/config/test_refusal_table.py::test_each_refusal_is_one_line_naming_its_flag_with_exit_2"
WIRE = ("tests/engine/test_multiworker.py::"
        "test_half_precision_on_the_wire_two_workers_equal_one_process_with_two_devices")
# Branches the recorded runs leave one way or untaken, with the test that
# takes the other way.
TAKEN_ELSEWHERE = {
    "towertrain/trainer.py::Trainer.engine_variables::self.loss_scale":
        "tests/state/test_trainer_save_restore.py::"
        "test_save_carries_the_dynamic_loss_scale_and_its_count",
    "towertrain/callbacks/divergence.py::DivergenceGuard.after_step::self.dynamic_loss_scale and "
    "math.isfinite(result.loss) and (result.extras.get('loss_scale', 0.0) > "
    "precision.MINIMUM_LOSS_SCALE)":
        "tests/recipe/test_accumulation_combined.py::"
        "test_skipped_update_keeps_the_epochs_updates_in_place",
    "towertrain/engine/exchange_settings.py::ExchangeSettings.refuse::p.compact_gradient_transfer "
    "and compact_dtype(p, p.use_bf16 and 'bfloat16') == 'bfloat16' and "
    "(p.resolved_all_reduce_spec == 'nccl')": REFUSALS,
    "towertrain/engine/exchange_settings.py::_validate_wire_dtype::compact_dtype(p, p.use_bf16 "
    "and 'bfloat16') == 'bfloat16' and collective_implementation(p.collective_implementation, "
    "device) == 'nccl' and (split_spec(spec)[0] != 'pscpu')": REFUSALS,
    # The recorded runs take the compute dtype and the float16 default; the
    # given --compact_transfer_dtype is taken across workers.
    "towertrain/engine/exchange_settings.py::compact_dtype::p.compact_transfer_dtype or half or "
    "'float16'": WIRE,
    "towertrain/engine/exchange/cross_worker.py::ClusterExchange.__init__::"
    "exchange.compact_transfer_dtype": WIRE,
    "towertrain/recipe/settings.py::Precision.refuse::p.use_fp16 and p.use_bf16": REFUSALS,
    "towertrain/recipe/settings.py::Precision.refuse::p.fp16_vars and "
    "p.resolved_all_reduce_spec == 'nccl'": REFUSALS,
    "towertrain/engine/process/devices.py::check_half_precision_layout::device == 'cpu' and "
    "data_format == 'NCHW' and (half == 'float16')":
        "tests/engine/test_step_error_blame.py::test_cpu_float16_nchw_is_refused_before_any_step",
    "towertrain/recipe/precision.py::check_model::precision.half not in computes":
        "tests/recipe/test_precision.py::test_a_float32_model_with_use_bf16_is_a_clear_error",
    # Multi-worker: the count summed before the towers in half precision.
    "towertrain/engine/step/train_step.py::TrainStep.__init__::num_workers > 1 and "
    "(not half_precision) and (not exchange.compact_gradient_transfer)":
        "tests/engine/test_multiworker.py::"
        "test_one_workers_stop_request_reaches_every_workers_decision_in_every_precision",
}


def _test_exists(node_id):
    path, name = node_id.split("::")
    with open(os.path.join(REPO, path)) as f:
        return re.search(rf"^def {re.escape(name)}\(", f.read(), re.M) is not None


@pytest.fixture(scope="module")
def recorded():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join([REPO, os.path.join(REPO, "tests"),
                                         env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, family.__file__], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def untaken(found, recorded):
    """The branches of `found` no run took both ways, on each model, and
    that TAKEN_ELSEWHERE does not list: {key: what is missing}."""
    missing = {}
    for key in found:
        if key in TAKEN_ELSEWHERE:
            continue
        runs = recorded.get(key, {})
        seen = {outcome for outcomes in runs.values() for outcome in outcomes}
        if seen != {True, False}:
            missing[key] = f"only {sorted(seen)} in every run"
            continue
        in_float32 = {o for run, outcomes in runs.items() if run.endswith("/float32")
                      for o in outcomes}
        half_only = seen - in_float32 or seen  # the way only half precision goes
        for model in family.MODELS:
            went = {o for run, outcomes in runs.items()
                    if run.startswith(model + "/") and not run.endswith("/float32")
                    for o in outcomes}
            if not half_only <= went:
                missing[key] = f"{model}: {sorted(half_only - went)} not taken"
    return missing


@pytest.mark.slow  # one process training every precision on both models
def test_every_precision_only_branch_is_taken_on_a_model_with_and_without_batch_norm(
        recorded):
    assert untaken(family.branches(), recorded) == {}


def test_the_branches_taken_elsewhere_exist_and_name_existing_tests():
    found = family.branches()
    assert sorted(set(TAKEN_ELSEWHERE) - set(found)) == []  # none stale
    assert [test for test in TAKEN_ELSEWHERE.values() if not _test_exists(test)] == []
    assert len(found) >= 30  # the scan still finds the family


def test_a_new_precision_branch_no_run_takes_is_found_and_reported(tmp_path):
    """The scratch change the family must catch: a branch on --use_bf16 in a
    new product module, which no run imports."""
    scratch = tmp_path / "towertrain" / "recipe"
    scratch.mkdir(parents=True)
    (scratch / "extra.py").write_text("def f(p):\n    if p.use_bf16 and p.num_gpus > 1:\n"
                                      "        return 1\n    return 0\n")
    found = family.branches(str(tmp_path / "towertrain"))
    assert len(found) == 1
    assert list(untaken(found, {}).values()) == ["only [] in every run"]
