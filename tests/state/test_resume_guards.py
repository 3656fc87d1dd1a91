"""A failed resume leaves the run record working; a resumed run warms up as a
fresh one does."""
import json
import os
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.state import run_record
from towertrain.state import export as export_lib
from towertrain.state.checkpoint import CheckpointError

from helpers import tiny_models  # noqa: F401 - registers ckpt_tiny
import helpers.cli


# ---------------------------------------------------------------------------
# 7. The run record is written only after a successful restore.

def _tiny_run_params(train_dir, **kw):
    kw.setdefault("num_batches", 2)
    kw.setdefault("num_warmup_batches", 0)
    return Params(model="trivial", device="cpu", num_gpus=2, batch_size=2, display_every=100,
                  train_dir=train_dir, **kw)


def _read_record(train_dir):
    with open(os.path.join(train_dir, run_record.RUN_INFO_FILE)) as f:
        return json.load(f)


def _train(params, **kw):
    trainer = Trainer(params, **kw)
    try:
        return trainer.train(write=helpers.cli.quiet)
    finally:
        trainer.close()


def test_a_failed_resume_leaves_the_run_record_and_export_working(tmp_path):
    train_dir = str(tmp_path / "run")
    _train(_tiny_run_params(train_dir))
    record = _read_record(train_dir)
    assert record["model"] == "trivial" and record["num_classes"] == 10

    # Another registered model: refused by name before anything is restored.
    other = _tiny_run_params(train_dir).replace(model="ckpt_tiny")
    with pytest.raises(CheckpointError, match=r"--model=ckpt_tiny.*--model=trivial"):
        _train(other)
    assert _read_record(train_dir) == record

    # The same model name but another network (a user's model): the record's
    # check passes, the restore fails, and the record must still describe the run.
    keras.utils.set_random_seed(1)
    impostor = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten(name="flatten"),
                                 keras.layers.Dense(4, name="logits")], name="trivial")
    with pytest.raises(CheckpointError, match="does not match the model"):
        _train(_tiny_run_params(train_dir).replace(model=None), model=impostor)
    assert _read_record(train_dir) == record

    output = str(tmp_path / "exported.keras")
    export_lib.export(train_dir=train_dir, output=output)
    exported = keras.saving.load_model(output)
    assert exported.output_shape == (None, 10)
    reader = tf.train.load_checkpoint(train_dir)
    np.testing.assert_array_equal(
        exported.get_layer("logits").kernel.numpy(),
        reader.get_tensor("model/logits__kernel/.ATTRIBUTES/VARIABLE_VALUE"))


# ---------------------------------------------------------------------------
# 12. A resumed run warms up as a fresh one does; step numbers continue.

def test_a_resumed_run_warms_up_and_continues_the_step_numbers(tmp_path):
    train_dir = str(tmp_path)
    first = []
    Trainer(_tiny_run_params(train_dir, num_warmup_batches=2, num_batches=2)).train(
        write=first.append)
    assert "Running warm up" in first and "Done warm up" in first
    assert [line for line in first if re.match(r"\d+\t", line)][0].startswith("3\t")

    lines = []
    trainer = Trainer(_tiny_run_params(train_dir, num_warmup_batches=2, num_batches=6))
    result = trainer.train(write=lines.append)
    assert result.steps == 8
    assert any(re.match(r"Resumed:\s+from step 4 ", line) for line in lines), lines
    assert lines.index("Running warm up") < lines.index("Done warm up")
    step_lines = [line for line in lines if re.match(r"\d+\t", line)]
    assert step_lines[0].startswith("7\t"), lines
    assert lines.index("Done warm up") < lines.index(step_lines[0])
