"""Every guard runs on the default settings and in warm-up.

A guard is a class of the product that ends or stops a run by itself: it
asks the loop to stop, raises TrainingDivergedError, exits the process or
aborts the collectives. The family is found in the source (a new guard joins
it by being written) and each member names the tests that fail, or would
hang, if it never armed: one on the default settings, one in warm-up (or why
warm-up does not apply). A guard with no entry fails here."""
import ast
import math
import os
import re
import types

import pytest

from towertrain import Params, Trainer
from towertrain.callbacks import DivergenceGuard, StepWatchdog, StopOnSignal
from towertrain.errors import TrainingDivergedError

from helpers.run_handles import default_callbacks_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRODUCT = os.path.join(REPO, "towertrain")
HERE = "tests/engine/test_guard_arming.py::"
WATCHDOG = "tests/callbacks/test_step_watchdog.py::"
PEERS = "tests/cluster/test_peer_watch.py::"
# Each guard: (the test on its default settings, the test in warm-up or the
# reason warm-up does not apply).
ARMING = {
    "engine/run/watchdog.py::Watchdog": (
        WATCHDOG + "test_with_the_default_settings_a_watch_runs_and_reports_a_hung_step",
        WATCHDOG + "test_a_step_hung_in_warm_up_is_reported_only_with_an_explicit_limit"),
    "engine/distributed/peer_watch.py::PeerWatch": (
        PEERS + "test_with_the_default_timeout_a_dead_peer_is_given_up",
        "no warm-up: it starts at the start-up broadcast, before the first step, and "
        "knows no steps"),
    "callbacks/divergence.py::DivergenceGuard": (
        HERE + "test_a_default_run_arms_its_guards_from_the_first_step",
        HERE + "test_a_step_that_diverges_in_warm_up_stops_the_run"),
    "callbacks/signals.py::StopOnSignal": (
        HERE + "test_a_default_run_arms_its_guards_from_the_first_step",
        "tests/callbacks/test_signals.py::"
        "test_sigterm_through_the_cli_saves_the_step_it_names_and_exits_zero"),
    "callbacks/cluster_stop.py::ClusterStop": (
        "tests/cluster/test_coordinated_stop.py::"
        "test_sigterm_on_either_worker_stops_both_at_one_step_and_resume_is_exact",
        "tests/engine/test_multiworker.py::"
        "test_one_workers_stop_request_reaches_every_workers_decision_in_every_precision"),
    "callbacks/periodic_eval.py::PeriodicEval": (
        "off by default: --stop_at_top_1_accuracy has no default",
        "tests/callbacks/test_eval_flags.py::"
        "test_stop_at_top_1_accuracy_stops_once_top_1_reaches_the_threshold"),
    "state/resume/checkpointer.py::Checkpointer": (
        "tests/state/test_trainer_save_restore.py::"
        "test_a_state_with_a_non_finite_variable_is_never_saved",
        "no warm-up: it checks each save, whichever step it is"),
}
_STOPS = {"request_stop", "_exit", "exit", "abort_collective_ops"}


def _stops_the_run(node):
    """Whether a method ends or stops the run by itself."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
            if inner.func.attr in _STOPS:
                return True
        if isinstance(inner, ast.Raise) and inner.exc is not None:
            called = inner.exc.func if isinstance(inner.exc, ast.Call) else inner.exc
            if getattr(called, "id", None) == "TrainingDivergedError":
                return True
    return False


def guards(root=PRODUCT):
    """'<file under root>::<class>' of every class with a method that stops the run."""
    found = set()
    for directory, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            with open(path) as f:
                tree = ast.parse(f.read(), path)
            for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
                methods = [m for m in cls.body if isinstance(m, ast.FunctionDef)]
                if any(_stops_the_run(m) for m in methods):
                    found.add(f"{os.path.relpath(path, root)}::{cls.name}")
    return found


def _is_test(entry):
    if "::" not in entry:
        return False
    path, name = entry.split("::")
    with open(os.path.join(REPO, path)) as f:
        return re.search(rf"^def {re.escape(name)}\(", f.read(), re.M) is not None


def test_every_guard_names_its_tests_on_default_settings_and_in_warm_up():
    assert sorted(guards()) == sorted(ARMING)
    for guard, entries in ARMING.items():
        for entry in entries:
            assert _is_test(entry) or not entry.startswith("tests/"), (guard, entry)
            assert _is_test(entry) or re.match(r"(off by default|no warm-up): ", entry), \
                (guard, entry)


def test_a_new_guard_is_found(tmp_path):
    """The scratch change the family must catch: a new callback that stops the loop."""
    (tmp_path / "callbacks").mkdir()
    (tmp_path / "callbacks" / "quota.py").write_text(
        "class QuotaStop:\n    def after_step(self, step, result, seconds):\n"
        "        if step > 9:\n            self.loop.request_stop('quota')\n")
    assert guards(str(tmp_path)) == {"callbacks/quota.py::QuotaStop"}
    assert sorted(guards(str(tmp_path)) - set(ARMING)) == ["callbacks/quota.py::QuotaStop"]


def _trivial(**kw):
    settings = dict(model="trivial", device="cpu", num_gpus=1, batch_size=2, num_batches=3,
                    display_every=100)
    return Params(**{**settings, **kw})


def test_a_default_run_arms_its_guards_from_the_first_step():
    """The default settings' callbacks hold the step watchdog on its automatic
    limit, the divergence guard and the signal handling, and each acts on the
    default run's first step (a warm-up step)."""
    trainer = Trainer(_trivial())
    assert trainer.plan.steps.warmup > 0  # the default warm-up
    built = default_callbacks_for(trainer, write=lambda line: None)
    kinds = {type(callback): callback for callback in built}
    assert {StepWatchdog, DivergenceGuard, StopOnSignal} <= set(kinds)
    assert kinds[StepWatchdog].watchdog.timeout is None  # automatic, not off
    diverged = types.SimpleNamespace(finite=False, loss=math.nan, extras={})
    kinds[DivergenceGuard].loop = types.SimpleNamespace(start_step=0)
    with pytest.raises(TrainingDivergedError, match=r"^loss is nan at step 1, "):
        kinds[DivergenceGuard].after_step(1, diverged, 0.1)
    trainer.close()


def test_a_step_that_diverges_in_warm_up_stops_the_run():
    """A rate that blows the weights up in the first update: step 2, a
    warm-up step of the default warm-up, has a non-finite loss and the run
    stops there with the divergence error (a guard armed only after warm-up
    would train on)."""
    trainer = Trainer(_trivial(num_batches=8, init_learning_rate=1e38, optimizer="sgd"))
    assert trainer.plan.steps.warmup >= 2
    with pytest.raises(TrainingDivergedError, match=r" at step 2[ ,:;]"):
        trainer.train(write=lambda line: None)
    trainer.close()
