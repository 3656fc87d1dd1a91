"""tf_cnn_benchmarks' eval flags through Trainer (docs/checkpoints.md):
--eval_during_training_every_n_epochs / _at_specified_steps / _at_specified_epochs,
--stop_at_top_1_accuracy, --num_eval_batches / --num_eval_epochs.

Runs use ckpt_tiny on 2 logical CPUs, batch 3 per device (global 6) and
--num_examples_per_epoch=12: 2 steps per epoch, 3 epochs = 6 steps.
"""
import re

import numpy as np
import pytest

from towertrain import Params, ParamsError, Trainer
from towertrain.state import run_record

from helpers import tiny_models

EVAL_LINE = re.compile(r"^Accuracy @ 1 = ([\d.]+) Accuracy @ 5 = [\d.]+ \(step (\d+)\) "
                       r"images/sec: [\d.]+ \[(\d+) examples", re.M)


def run(train_dir=None, input_source=None, **kw):
    settings = dict(model="ckpt_tiny", device="cpu", num_gpus=2, variable_update="replicated",
                    optimizer="momentum", num_warmup_batches=0, num_epochs=3,
                    num_examples_per_epoch=12, display_every=100,
                    train_dir=str(train_dir) if train_dir else None)
    trainer = Trainer(Params(**{**settings, **kw}), input_source=input_source)
    lines = []
    try:
        result = trainer.train(write=lines.append, eval_data=tiny_models.eval_data("NHWC"))
    finally:
        trainer.close()
    text = "\n".join(lines)
    return result, text, [(int(m.group(2)), float(m.group(1)), int(m.group(3)))
                          for m in EVAL_LINE.finditer(text)]


@pytest.mark.parametrize("flags,steps", [
    # Epoch e ends at step 2e; the run's end (step 6) is always evaluated once.
    ({"eval_during_training_every_n_epochs": 1}, [2, 4, 6]),
    ({"eval_during_training_every_n_epochs": 1.5}, [3, 6]),
    ({"eval_during_training_at_specified_steps": "5,1,9"}, [1, 5, 6]),
    ({"eval_during_training_at_specified_epochs": "0.5,2"}, [1, 4, 6]),
    ({"eval_during_training_every_n_steps": 4}, [4, 6]),
])
def test_eval_during_training_runs_after_the_scheduled_steps_and_at_the_end(flags, steps):
    result, text, evals = run(**flags)
    assert [step for step, _, _ in evals] == steps, text
    assert result.steps == 6


def test_epoch_schedules_need_the_epoch_length():
    params = Params(model="ckpt_tiny", device="cpu", num_batches=4,
                    eval_during_training_every_n_epochs=1)
    # The run plan refuses it before anything is built (towertrain.plan.steps).
    with pytest.raises(ParamsError, match=r"^--eval_during_training_every_n_epochs=1"
                       r"(\.0)?: needs the epoch length"):
        Trainer(params)


@pytest.mark.parametrize("kw,message", [
    ({"eval_during_training_every_n_steps": 2, "eval_during_training_every_n_epochs": 1.0},
     "--eval_during_training_every_n_epochs=1.0: conflicts with "
     "--eval_during_training_every_n_steps"),
    ({"eval_during_training_at_specified_steps": "2,x"},
     "--eval_during_training_at_specified_steps=2,x: must be comma-separated whole"),
    ({"eval_during_training_at_specified_epochs": "0,1"},
     "--eval_during_training_at_specified_epochs=0,1: epochs must be > 0"),
    ({"stop_at_top_1_accuracy": 0.5}, "--stop_at_top_1_accuracy=0.5: needs one of the "
     "--eval_during_training_* flags"),
    ({"num_eval_batches": 2, "num_eval_epochs": 1.0}, "--num_eval_batches=2: conflicts "
     "with --num_eval_epochs=1.0"),
    ({"eval_interval_secs": 5.0}, "--eval_interval_secs=5.0: only applies with --eval"),
    ({"eval_dir": "e"}, "--eval_dir=e: only applies with --eval"),
    ({"eval": True, "checkpoint": "c", "eval_interval_secs": 1.0},
     "--eval_interval_secs=1.0: follows --train_dir's new checkpoints"),
    ({"display_perf_ewma": 1.5}, "--display_perf_ewma=1.5: must be in (0, 1]"),
])
def test_bad_eval_flags_fail_naming_the_flag(kw, message):
    with pytest.raises(ParamsError) as err:
        Params(**kw)
    assert str(err.value).startswith(message)


def test_stop_at_top_1_accuracy_stops_at_that_eval_and_its_checkpoint_is_final(tmp_path):
    # Top-1 of a 10-class model on 23 random examples: far above 0.01, below 1.
    result, text, evals = run(tmp_path, eval_during_training_every_n_epochs=1,
                              stop_at_top_1_accuracy=0.01)
    assert [step for step, _, _ in evals] == [2], text
    assert "Stopping, as eval accuracy at least 0.01 was reached" in text
    assert result.steps == 2 and "Saved checkpoint at step 2" in text
    record = run_record.read(str(tmp_path))
    assert (record["final_step"], record["final_checkpoint"]) == (2, "ckpt-2")
    # Out of reach: the run trains to its end, and the end is final.
    result, text, evals = run(tmp_path / "full", eval_during_training_every_n_epochs=1,
                              stop_at_top_1_accuracy=1.0)
    assert [step for step, _, _ in evals] == [2, 4, 6] and result.steps == 6
    assert run_record.read(str(tmp_path / "full"))["final_step"] == 6


def test_stop_at_top_1_with_staged_input_stops_at_that_eval_not_a_batch_later(tmp_path):
    # In-memory input is staged (synthetic input is not): the eval step fences
    # staging, so the stop and its checkpoint are at the eval's step.
    from towertrain.input_pipeline import from_arrays
    rng = np.random.default_rng(0)
    images = rng.standard_normal((60, 8, 8, 3)).astype(np.float32)
    labels = rng.integers(0, 10, 60).astype(np.int32)
    assert Params(model="ckpt_tiny").staging_depth >= 1  # the default stages
    result, text, evals = run(tmp_path, input_source=from_arrays(images, labels, 6),
                              num_epochs=None,
                              num_examples_per_epoch=None, num_batches=9,
                              eval_during_training_every_n_steps=3, stop_at_top_1_accuracy=0.01)
    assert [step for step, _, _ in evals] == [3], text
    assert "Stopping, as eval accuracy at least 0.01 was reached" in text
    assert result.steps == 3 and "Saved checkpoint at step 3" in text, text
    assert run_record.read(str(tmp_path))["final_step"] == 3


def _correct_per_example(trainer):
    """1/0 per example of the tiny eval set (23), from the model's own logits."""
    data = tiny_models.eval_data(trainer.data_format)
    labels = np.concatenate([labels.numpy() for _, labels in data.dataset])
    logits = trainer.model.predict(np.concatenate([i.numpy() for i, _ in data.dataset]),
                                   verbose=0)
    return (np.argmax(logits, axis=1) == labels).astype(np.float64)


@pytest.mark.parametrize("kw,examples", [
    # 7 full batches of 5: the 23-example split once, then its first 12 again.
    ({"num_eval_batches": 7}, 35),
    # ceil(0.5 x 23 / 5) = 3 full batches: the first 15 examples.
    ({"num_eval_epochs": 0.5}, 15),
    ({"num_eval_epochs": 1.5}, 35),
    ({}, 23),  # neither: the split once, last batch partial
])
def test_num_eval_batches_and_epochs_set_how_many_full_batches_are_scored(kw, examples):
    # The tiny eval set has batches of 5 but does not say so: --eval_batch_size does.
    trainer = Trainer(tiny_models.tiny_params(gpus=1, eval_batch_size=5, **kw))
    try:
        result = trainer.evaluate(tiny_models.eval_data("NHWC"))
        correct = _correct_per_example(trainer)
    finally:
        trainer.close()
    expected = np.resize(correct, examples)  # the split repeated, cut at `examples`
    assert result.num_examples == examples
    assert result.top1 == pytest.approx(expected.mean(), abs=1e-9)


class _Evaluations:
    """An evaluator whose results are `correct` (each a count) of 4 examples."""

    def __init__(self, correct):
        self.correct = list(correct)

    def evaluate(self, eval_data):
        from towertrain.engine.evaluation import evaluator
        return evaluator.result_of(eval_data,
                                   evaluator.Tally(self.correct.pop(0), 4, 4, 10.0, None))


class _Loop:
    def __init__(self):
        self.stops = []

    def request_stop(self, reason, final=False):
        self.stops.append((reason, final))


@pytest.mark.parametrize("threshold, stops", [
    (0.75, True),  # reached exactly: 3 of 4 is 0.75
    (float(np.nextafter(0.75, 1.0)), False),  # asked a hair above what was reached
    (float(np.nextafter(0.75, 0.0)), True)])  # a hair below: passed
def test_stop_at_top_1_accuracy_stops_once_top_1_reaches_the_threshold(threshold, stops):
    from towertrain.callbacks.periodic_eval import PeriodicEval
    from towertrain.engine.evaluation.evaluator import EvalData
    lines, loop = [], _Loop()
    callback = PeriodicEval(_Evaluations([2, 3]), add_fence=lambda step: None, schedule=1,
                            eval_data=EvalData(None, 4, "4 examples"), write=lines.append,
                            stop_at_top_1=threshold)
    callback.loop = loop
    callback._evaluate(5)  # 2 of 4: never enough
    assert loop.stops == []
    callback._evaluate(6)
    assert loop.stops == ([(f"--stop_at_top_1_accuracy={threshold:g} (top-1 0.7500 at step 6)",
                            True)] if stops else [])
    assert (lines[-1] == f"Stopping, as eval accuracy at least {threshold:g} was reached") == \
        stops
