"""`python -m towertrain.export`: every option of its documented list on a run
trained in NCHW (the layout that is not the default on CPU), in one process
running several export command lines: --data_format's default is the training
run's, --include_preprocessing feeds raw NHWC pixels to an NCHW model the
right way round, and --output/--saved_model are checked before the work
(an existing directory is not a .keras file, an existing file is replaced)."""
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from towertrain import Params, Trainer

from helpers import cifar_files
from helpers.cli import TESTS_DIR

# Runs each command line of argv[1] (JSON) through the export command's own
# flags and main; writes [(status, stderr)] to argv[2].
DRIVER = """
import contextlib, io, json, sys
from absl import flags
from towertrain.commands import export
export.define_flags()
results = []
for args in json.loads(sys.argv[1]):
    flags.FLAGS.unparse_flags()
    flags.FLAGS(["towertrain.export", *args])
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = export.main(["towertrain.export"])
    results.append([status, err.getvalue()])
with open(sys.argv[2], "w") as f:
    json.dump(results, f)
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A trivial model trained 3 steps in NCHW, its logits on the test split
    (standardized by numpy), and the export command lines' results."""
    root = tmp_path_factory.mktemp("export")
    data_dir = cifar_files.write_dataset(str(root / "data"), 32, 12, seed=2)
    train_dir = str(root / "run")
    trainer = Trainer(Params(model="trivial", device="cpu", data_dir=data_dir,
                             data_format="NCHW", batch_size=8, num_batches=3,
                             num_warmup_batches=0, train_dir=train_dir, display_every=100))
    trainer.train(write=lambda line: None)
    trainer.sync_model()
    standardized, _ = cifar_files.read_test_split(data_dir)  # NHWC
    reference = np.asarray(trainer.model(standardized.transpose(0, 3, 1, 2), training=False))
    trainer.close()
    (root / "dir.keras").mkdir()
    (root / "old.keras").write_text("replace me")
    (root / "a_file").write_text("x")
    cases = {
        "default": [f"--output={root}/default.keras"],
        "nhwc": [f"--output={root}/nhwc.keras", "--data_format=NHWC"],
        "preprocessing": [f"--output={root}/raw.keras", "--include_preprocessing"],
        "existing_dir": [f"--output={root}/dir.keras"],
        "existing_file": [f"--output={root}/old.keras"],
        "saved_model_file": [f"--saved_model={root}/a_file"],
    }
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(TESTS_DIR), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(
        [[f"--train_dir={train_dir}", *args] for args in cases.values()]),
        str(root / "results.json")], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = dict(zip(cases, json.loads((root / "results.json").read_text())))
    return root, data_dir, standardized, reference, results


def test_data_format_defaults_to_the_training_run_s(exported):
    root, _, standardized, reference, results = exported
    assert results["default"][0] == 0, results["default"]
    model = keras.saving.load_model(root / "default.keras")
    assert tuple(model.input_shape) == (None, 3, 32, 32)
    np.testing.assert_allclose(
        np.asarray(model(standardized.transpose(0, 3, 1, 2), training=False)), reference,
        atol=1e-4)
    assert results["nhwc"][0] == 0, results["nhwc"]  # the other layout, when asked
    nhwc = keras.saving.load_model(root / "nhwc.keras")
    assert tuple(nhwc.input_shape) == (None, 32, 32, 3)
    np.testing.assert_allclose(np.asarray(nhwc(standardized, training=False)), reference,
                               atol=1e-4)


def test_include_preprocessing_of_an_nchw_run_takes_raw_nhwc_pixels(exported):
    root, data_dir, _, reference, results = exported
    assert results["preprocessing"][0] == 0, results["preprocessing"]
    raw = np.fromfile(f"{data_dir}/test_batch.bin", np.uint8).reshape(
        -1, cifar_files.RECORD_BYTES)[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    model = keras.saving.load_model(root / "raw.keras")
    assert tuple(model.input_shape) == (None, 32, 32, 3)
    np.testing.assert_allclose(np.asarray(model(raw.astype(np.float32), training=False)),
                               reference, atol=1e-4)


def test_output_paths_are_checked_before_the_work(exported):
    root, _, _, _, results = exported
    status, err = results["existing_dir"]
    assert status == 2 and err.startswith(
        f"towertrain.export: error: --output={root}/dir.keras: is a directory; "), err
    assert os.listdir(root / "dir.keras") == []
    status, err = results["saved_model_file"]
    assert status == 2 and err.startswith(f"towertrain.export: error: --saved_model="
                                          f"{root}/a_file: is a file, not a directory"), err
    assert (root / "a_file").read_text() == "x"
    assert results["existing_file"][0] == 0, results["existing_file"]  # replaced
    assert keras.saving.load_model(root / "old.keras").input_shape == (None, 3, 32, 32)
