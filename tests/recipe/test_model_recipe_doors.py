"""The model's learning-rate recipe through the doors users use: the command
line prints it (or the flags' rate that replaces it) and refuses what
tf_cnn_benchmarks refuses, and a run recorded before recipes resumes with the
constant rate it trained with.

The command lines are tf_cnn_benchmarks' (resnet50 on 2 devices): each is
read until the run starts its warm-up (the header is out, every check passed)
and then killed, since training resnet50 on a CPU takes minutes.
"""
import json
import os
import subprocess

import pytest

from helpers.cli import TESTS_DIR, command, unbuffered_env
from helpers.tiny_models import build_tiny
from towertrain import Params, Trainer
from towertrain.models import LearningRateRecipe, register_model, registry

RESNET50 = ["--model=resnet50", "--num_gpus=2", "--device=cpu", "--batch_size=4"]
RUNS = {"recipe": [], "init": ["--init_learning_rate=0.05"],
        "piecewise": ["--piecewise_learning_rate_schedule=0.1;30;0.01",
                      "--num_learning_rate_warmup_epochs=1"],
        "refused": ["--piecewise_learning_rate_schedule=0.1;30;0.01",
                    "--init_learning_rate=0.05"]}


@pytest.fixture(scope="module")
def headers():
    """{run: its `Learning rate:` line} of RUNS, each read until it starts its
    warm-up, and the refused run's (exit status, stdout, stderr); all start at
    once (each spends its time importing TensorFlow and building resnet50)."""
    env = unbuffered_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.dirname(TESTS_DIR),
                                                      env.get("PYTHONPATH")]))
    runs = {name: subprocess.Popen(command(*RESNET50, *flags), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=env)
            for name, flags in RUNS.items()}
    found = {}
    try:
        out, err = runs["refused"].communicate(timeout=240)
        found["refused"] = (runs["refused"].returncode, out, err)
        for name in ("recipe", "init", "piecewise"):
            run, lines = runs[name], []
            for line in run.stdout:
                lines.append(line.rstrip("\n"))
                if line.startswith("Running warm up"):
                    break
            assert lines and lines[-1] == "Running warm up", (name, "\n".join(lines))
            [found[name]] = [line for line in lines if line.startswith("Learning rate:")]
    finally:
        for run in runs.values():
            run.kill()
            run.communicate()
    return found


def test_resnet50_prints_its_recipe_and_init_learning_rate_replaces_it(headers):
    assert headers["recipe"] == (
        "Learning rate: 0.128 x 8/256 = 0.004, warmup from 0 over 5 epochs (800729 steps), "
        "0.004 until epoch 30 (step 4804377), 0.0004 until epoch 60 (step 9608753), 4e-05 "
        "until epoch 80 (step 12811671), 4e-06 until epoch 90 (step 14413129), then 4e-07; "
        "epoch = 1,281,167 examples / 8 (imagenet's known training size, as "
        "tf_cnn_benchmarks; the data is synthetic) (resnet50's recipe, as "
        "tf_cnn_benchmarks' ResnetModel)")
    assert headers["init"] == "Learning rate: 0.05, constant (--init_learning_rate)"


def test_piecewise_refuses_init_learning_rate_and_runs_with_warmup(headers):
    code, out, err = headers["refused"]
    assert (code, out) == (2, "")
    assert err == ("towertrain: error: --piecewise_learning_rate_schedule=0.1;30;0.01: "
                   "conflicts with --init_learning_rate=0.05: the piecewise schedule sets every "
                   "learning rate; drop one\n")
    # 1,281,167 / 8 = 160,146 steps an epoch (ImageNet's known size on synthetic data).
    assert headers["piecewise"] == (
        "Learning rate: piecewise: 0.1 until epoch 30 (step 4804380), then 0.01; linear "
        "warmup over 1 epoch (160146 steps); epoch = 160146 steps (1,281,167 examples: "
        "imagenet's known training size, as tf_cnn_benchmarks; the data is synthetic) "
        "(--piecewise_learning_rate_schedule)")


def test_a_run_recorded_before_recipes_resumes_with_its_constant_rate(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    # The recipe starts at 0.4; the model's constant rate (before recipes) is 0.1.
    register_model("recipe_tiny", build_tiny, default_image_size=8, default_batch_size=3,
                   default_learning_rate=0.1, default_dataset="cifar10",
                   learning_rate_recipe=LearningRateRecipe(values=(0.4, 0.04),
                                                           boundary_epochs=(1,)))
    train_dir = str(tmp_path / "run")
    params = Params(model="recipe_tiny", device="cpu", num_gpus=1, num_warmup_batches=0,
                    display_every=100, num_batches=2, train_dir=train_dir)

    def train(num_batches):
        trainer, lines = Trainer(params.replace(num_batches=num_batches)), []
        try:
            trainer.train(write=lines.append)
        finally:
            trainer.close()
        [rate] = [line for line in lines if line.startswith("Learning rate:")]
        with open(os.path.join(train_dir, "towertrain_run.json")) as f:
            return trainer, rate, json.load(f)

    first, rate, record = train(2)
    assert first.learning_rate.value_at(2) == pytest.approx(0.4)
    assert record["learning_rate"] == {"source": "recipe", "describe": rate[15:],
                                       "values": [0.4, 0.04]}
    # What a run started before recipes left: a record without the entry.
    del record["learning_rate"]
    with open(os.path.join(train_dir, "towertrain_run.json"), "w") as f:
        json.dump(record, f)

    kept = ("Learning rate: 0.1, constant (kept at resume: the run in "
            f"--train_dir={train_dir} was recorded before models had learning-rate recipes "
            "and trained with recipe_tiny's constant rate; a new run trains with "
            "recipe_tiny's recipe)")
    resumed, rate, record = train(4)
    assert (resumed.global_step(), rate) == (4, kept)
    assert [float(o.learning_rate) for o in resumed.variables.optimizers()] == pytest.approx(
        [0.1] * len(resumed.variables.optimizers()))
    assert record["learning_rate"]["source"] == "kept"
    # ... and so does every later resume of it.
    again, rate, _ = train(5)
    assert (again.global_step(), rate) == (5, kept)
