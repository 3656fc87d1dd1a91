"""Export: a stock-Keras .keras file and a SavedModel, checked in a fresh process."""
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from towertrain import Trainer

import test_checkpoint

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
EXPORT_DRIVER = f"""
import sys
sys.path.insert(0, {TESTS_DIR!r})
import test_checkpoint  # registers ckpt_tiny
from towertrain import export
export.run()
"""
# Runs without towertrain importable in spirit: it must not be imported at all.
LOAD_AND_PREDICT = """
import sys
import numpy as np, keras, tensorflow as tf
images = np.load(sys.argv[1])
model = keras.saving.load_model(sys.argv[2])
np.save(sys.argv[3], np.asarray(model(images, training=False)))
serving = tf.saved_model.load(sys.argv[4]).signatures["serving_default"]
(out,) = serving(tf.constant(images)).values()
np.save(sys.argv[5], out.numpy())
assert not any(name.startswith("towertrain") for name in sys.modules), "towertrain imported"
"""


@pytest.mark.slow
def test_exported_keras_and_saved_model_match_engine_eval(tmp_path):
    train_dir = str(tmp_path / "train")
    # Trained NCHW on 2 replicas, exported NHWC: the layout changes, the logits do not.
    trainer = Trainer(test_checkpoint.tiny_params("replicated", 2, "NCHW",
                                                  train_dir=train_dir))
    trainer.train(write=lambda line: None)
    engine = test_checkpoint.evaluate(trainer)
    images = np.concatenate([x.numpy() for x, _ in test_checkpoint.eval_data("NHWC")])

    keras_file, saved_model = str(tmp_path / "model.keras"), str(tmp_path / "saved")
    done = subprocess.run(
        [sys.executable, "-c", EXPORT_DRIVER, f"--train_dir={train_dir}",
         f"--output={keras_file}", f"--saved_model={saved_model}", "--data_format=NHWC"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"Exported {keras_file}" in done.stdout

    with zipfile.ZipFile(keras_file) as archive:
        config = json.loads(archive.read("config.json"))
    layer_classes = {layer["class_name"] for layer in config["config"]["layers"]}
    assert "BatchNormalization" in layer_classes
    assert "FusedBatchNormalization" not in json.dumps(config)

    np.save(tmp_path / "images.npy", images)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    loaded = subprocess.run(
        [sys.executable, "-c", LOAD_AND_PREDICT, str(tmp_path / "images.npy"), keras_file,
         str(tmp_path / "keras_logits.npy"), saved_model, str(tmp_path / "sm_logits.npy")],
        capture_output=True, text=True, timeout=300, cwd=str(tmp_path), env=env)
    assert loaded.returncode == 0, loaded.stderr
    np.testing.assert_allclose(np.load(tmp_path / "keras_logits.npy"), engine.logits,
                               atol=1e-5)
    np.testing.assert_allclose(np.load(tmp_path / "sm_logits.npy"), engine.logits, atol=1e-5)


def test_export_errors_are_one_line(tmp_path):
    from towertrain import checkpoint as ckpt_lib, export
    with pytest.raises(ckpt_lib.CheckpointError, match="no checkpoint in"):
        export.export(train_dir=str(tmp_path), output=str(tmp_path / "m.keras"))
    with pytest.raises(ckpt_lib.CheckpointError, match="must end in .keras"):
        export.export(train_dir=str(tmp_path), output=str(tmp_path / "m.h5"))
