"""`--eval --eval_interval_secs` beside a training run, and --eval_dir (docs:
Evaluation): each new checkpoint evaluated once, in step order, until the
checkpoint the training run records as final."""
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.state import eval_follower
from towertrain.state import run_record

import helpers.cli
from helpers import tiny_models  # noqa: F401 - registers ckpt_tiny

TIMEOUT = 240
EVAL_LINE = re.compile(r"^Accuracy @ 1 = ([\d.]+) Accuracy @ 5 = [\d.]+ \(step (\d+)\)", re.M)


def top1_events(directory):
    """{step: accuracy/top1} from the event files in `directory`."""
    found = {}
    for name in sorted(os.listdir(directory)):
        for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
            for value in event.summary.value:
                if value.tag == "accuracy/top1":
                    assert event.step not in found, f"step {event.step} written twice"
                    found[event.step] = float(tf.make_ndarray(value.tensor))
    return found


def _driver_command(*flags):
    return [sys.executable, "-c", helpers.cli.driver("train"), *flags]


@pytest.mark.slow  # two TensorFlow processes at once (~70 s on a loaded 2-core machine)
def test_evaluator_beside_a_training_run_scores_each_checkpoint_once_until_the_final(
        tmp_path):
    """Both run at once as subprocesses: the evaluator starts first (it waits for
    the run's record), training saves every 2 of 12 steps."""
    train_dir, eval_dir = str(tmp_path / "train"), str(tmp_path / "eval")
    env = helpers.cli.unbuffered_env()
    evaluator = subprocess.Popen(
        _driver_command("--eval", f"--train_dir={train_dir}", "--device=cpu",
                        "--eval_interval_secs=0.2", f"--eval_dir={eval_dir}"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    trainer = None
    try:
        # The evaluator is up and waiting before training starts.
        assert "Waiting for a training run" in evaluator.stdout.readline()
        trainer = subprocess.Popen(
            _driver_command("--model=ckpt_tiny", "--device=cpu", "--num_batches=12",
                            "--num_warmup_batches=0", "--save_model_steps=2",
                            "--max_ckpts_to_keep=10", f"--train_dir={train_dir}"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        train_out, train_err = trainer.communicate(timeout=TIMEOUT)
        assert trainer.returncode == 0, train_err[-2000:]
        eval_out, eval_err = evaluator.communicate(timeout=TIMEOUT)
    finally:
        for proc in (evaluator, trainer):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert evaluator.returncode == 0, eval_out[-2000:] + eval_err[-2000:]
    printed = [(int(step), float(top1)) for top1, step in EVAL_LINE.findall(eval_out)]
    assert [step for step, _ in printed] == [2, 4, 6, 8, 10, 12], eval_out
    assert "Evaluated the final checkpoint (step 12)" in eval_out
    assert run_record.read(train_dir)["final_step"] == 12
    # --eval_dir holds the same results as TensorBoard events, at each step.
    events = top1_events(eval_dir)
    assert sorted(events) == [2, 4, 6, 8, 10, 12]
    for step, top1 in printed:
        assert events[step] == pytest.approx(top1, abs=1e-4)
    assert not os.path.exists(os.path.join(train_dir, "eval"))  # nothing under summaries


def _train_in_process(train_dir, num_batches, save_steps):
    params = Params(model="ckpt_tiny", device="cpu", num_batches=num_batches,
                    num_warmup_batches=0, save_model_steps=save_steps, max_ckpts_to_keep=10,
                    train_dir=str(train_dir), display_every=100)
    trainer = Trainer(params)
    try:
        trainer.train(write=lambda _: None)
    finally:
        trainer.close()


def test_follower_waits_for_the_final_mark_and_skips_deleted_checkpoints(tmp_path):
    _train_in_process(tmp_path, num_batches=6, save_steps=2)
    record = run_record.read(str(tmp_path))
    assert (record["final_step"], record["final_checkpoint"]) == (6, "ckpt-6")
    # As if the run were still going: no final mark yet, ckpt-4 deleted by it.
    del record["final_step"], record["final_checkpoint"]
    run_record.write(str(tmp_path), record)
    for name in os.listdir(tmp_path):
        if name.startswith("ckpt-4."):
            os.remove(tmp_path / name)
    calls, lines, sleeps = [], [], []

    def evaluate(step, path):
        calls.append(step)
        return not eval_follower.gone(path)

    def sleep(seconds):
        sleeps.append(seconds)
        if len(sleeps) == 3:  # the run ends: its final checkpoint is marked
            run_record.mark_final(str(tmp_path), 6, str(tmp_path / "ckpt-6"))

    steps = eval_follower.follow(str(tmp_path), 7.0, evaluate, lines.append, sleep)
    assert calls == [2, 4, 6] and steps == [2, 6]  # each once, in order; 4 was gone
    assert sleeps == [7.0] * 3  # polled until the mark appeared
    assert any(line.startswith(f"Skipped {tmp_path}/ckpt-4: deleted") for line in lines)
    assert lines[-1].startswith("Evaluated the final checkpoint (step 6)")


def test_a_resumed_run_is_not_final_until_it_ends(tmp_path):
    _train_in_process(tmp_path, num_batches=2, save_steps=2)
    assert run_record.read(str(tmp_path))["final_step"] == 2
    # A resume rewrites the record at its start; its end marks the new final.
    _train_in_process(tmp_path, num_batches=4, save_steps=2)
    assert run_record.read(str(tmp_path))["final_step"] == 4
