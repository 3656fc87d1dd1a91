"""A library run on the user's own model (Trainer(params, model=...)) records
that model, marked as the user's: its run record said
"model": "trivial", so --eval and export rebuilt the registry's trivial model
and failed on missing variables. Now they say what they need; a library
resume with the model goes on."""
import json
import os

import keras
import numpy as np
import pytest

from towertrain import Params, Trainer
from towertrain.input_pipeline import from_arrays
from towertrain.state import checkpoint as ckpt_lib
from towertrain.state import run_record
from towertrain.state import export as export_lib

import helpers.cli
from helpers import refusals
from state.test_resume_settings import files_of


def _model(name):
    return keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten(name="flat"),
                             keras.layers.Dense(10, name="logits")], name=name)


def _train(train_dir, num_batches, name="mine"):
    rng = np.random.default_rng(0)
    images, labels = rng.random((16, 8, 8, 3), dtype=np.float32), np.arange(16) % 10
    trainer = Trainer(Params(device="cpu", num_batches=num_batches, num_warmup_batches=0,
                             display_every=100, train_dir=train_dir),
                      model=_model(name), input_source=from_arrays(images, labels, 4))
    try:
        trainer.train(write=helpers.cli.quiet)
        return trainer.global_step()
    finally:
        trainer.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    train_dir = str(tmp_path_factory.mktemp("user_model") / "run")
    assert _train(train_dir, 2) == 2
    return train_dir


def test_the_record_names_the_users_model(run):
    with open(os.path.join(run, run_record.RUN_INFO_FILE)) as f:
        record = json.load(f)
    assert (record["model"], record["user_model"]) == ("mine", True)


def test_eval_on_the_command_line_says_it_needs_the_library(run, capsys):
    before = files_of(run)
    status, err = refusals.run_cli(["--eval", f"--train_dir={run}", "--device=cpu"], capsys)
    assert status == 2
    assert err == (
        f"towertrain: error: --eval: --train_dir={run} was trained on your own Keras model "
        "'mine' (Trainer(model=...)), which the command line cannot build; evaluate it in "
        "the library: Trainer(params, model=<that model>), then trainer.restore(<its "
        "checkpoint>) and trainer.evaluate(...)\n")
    assert files_of(run) == before


def test_export_says_it_needs_the_library(run, tmp_path):
    with pytest.raises(ckpt_lib.CheckpointError) as raised:
        export_lib.export(train_dir=run, output=str(tmp_path / "out.keras"))
    assert str(raised.value) == (
        f"--train_dir={run} was trained on your own Keras model 'mine' (Trainer(model=...)), "
        "which the command line cannot build; export it in the library: Trainer(params, "
        "model=<that model>), then trainer.restore(<its checkpoint>) and "
        "trainer.export(...)")
    assert not os.path.exists(tmp_path / "out.keras")


def test_a_command_line_resume_is_refused_and_a_library_one_goes_on(run, capsys):
    before = files_of(run)
    status, err = refusals.run_cli(["--model=trivial", "--device=cpu", "--num_batches=4",
                                    "--num_warmup_batches=0", f"--train_dir={run}"], capsys)
    assert status == 2
    assert err == (
        f"towertrain: error: --model=trivial but --train_dir={run} was trained on your own "
        "Keras model 'mine' (Trainer(model=...)), which the command line cannot build; "
        "resume it in the library with Trainer(params, model=<that model>), or use another "
        "--train_dir\n")
    assert files_of(run) == before  # nothing trained, nothing written

    # The same network under another name (Keras numbers unnamed models per
    # process) resumes: the restore checks its variables, not its name.
    assert _train(run, 4, name="mine_1") == 4  # resumed at step 2, trained to 4
