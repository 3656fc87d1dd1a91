"""Export: a stock-Keras .keras file and a SavedModel, checked in a fresh process."""
import json
import os
import re
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from towertrain import Trainer

from helpers import tiny_models
from helpers.cli import command, driver, run_cli
from helpers.model_checkpoints import write_checkpoint

EXPORT_DRIVER = driver("export")
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
    trainer = Trainer(tiny_models.tiny_params("replicated", 2, "NCHW",
                                                  train_dir=train_dir))
    trainer.train(write=lambda line: None)
    engine = tiny_models.evaluate(trainer)
    images = np.concatenate([x.numpy() for x, _ in tiny_models.eval_data("NHWC").dataset])

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
    from towertrain.state import checkpoint as ckpt_lib
    from towertrain.state import export
    with pytest.raises(ckpt_lib.CheckpointError, match="no checkpoint in"):
        export.export(train_dir=str(tmp_path), output=str(tmp_path / "m.keras"))
    with pytest.raises(ckpt_lib.CheckpointError, match="must end in .keras"):
        export.export(train_dir=str(tmp_path), output=str(tmp_path / "m.h5"))


def _error_lines(stderr):
    """stderr without TensorFlow's C++ start-up logging (e.g. the oneDNN notice),
    which TF_CPP_MIN_LOG_LEVEL does not silence before absl's log is initialized."""
    return [line for line in stderr.strip().splitlines()
            if not re.match(r"(WARNING: All log messages before absl|[IWE]\d{4} )", line)]


def _cli(*args, timeout=120):
    return run_cli(*args, module="towertrain.export", timeout=timeout,
                   env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))


def test_cli_help_exits_0_and_lists_the_flags():
    done = _cli("--help")
    assert done.returncode == 0, done.stderr
    for flag in ("--train_dir", "--checkpoint", "--output", "--saved_model",
                 "--data_format", "--model"):
        assert flag in done.stdout


@pytest.mark.parametrize("args, message", [
    (["--no_such_flag=1"], "Unknown command line flag 'no_such_flag'"),
    (["--data_format=NCWH"], "value should be one of <NCHW|NHWC>"),
    (["stray"], "unexpected arguments ['stray']"),
])
def test_cli_bad_arguments_fail_in_one_line(args, message):
    done = _cli(*args)
    assert done.returncode == 2
    (line,) = _error_lines(done.stderr)
    assert line.startswith("towertrain.export: error: ") and message in line


def test_model_flag_contradicting_the_run_record_fails_naming_both(tmp_path):
    from towertrain.state import export
    train_dir = str(tmp_path / "train")
    write_checkpoint("trivial", train_dir, np.random.RandomState(0))
    done = _cli(f"--train_dir={train_dir}", f"--output={tmp_path / 'm.keras'}",
                "--model=cifar_cnn")
    assert done.returncode == 2
    assert _error_lines(done.stderr) == [
        f"towertrain.export: error: --model=cifar_cnn but the checkpoint in {train_dir} "
        "was trained with --model=trivial; drop --model or use another --train_dir"]
    assert not (tmp_path / "m.keras").exists()
    # The same name is fine.
    export.export(train_dir=train_dir, output=str(tmp_path / "m.keras"), model_name="trivial")
    assert (tmp_path / "m.keras").exists()


def test_a_damaged_run_record_fails_naming_the_file_and_the_way_out(tmp_path):
    """Left by an earlier writer cut short (a full disk before the record was
    written whole): export read it with the bare JSON error, naming nothing."""
    train_dir = str(tmp_path / "train")
    write_checkpoint("trivial", train_dir, np.random.RandomState(0))
    record = os.path.join(train_dir, "towertrain_run.json")
    with open(record, "w") as f:
        f.write('{"model": "triv')
    done = _cli(f"--train_dir={train_dir}", f"--output={tmp_path / 'm.keras'}")
    assert done.returncode == 2
    assert _error_lines(done.stderr) == [
        f"towertrain.export: error: {record}: unreadable run record (Unterminated string "
        "starting at: line 1 column 11 (char 10)); delete it or use another --train_dir"]
    assert not (tmp_path / "m.keras").exists()


def test_a_bare_checkpoint_name_reads_the_record_of_the_current_folder(tmp_path):
    """`--checkpoint=ckpt-1` from inside the train_dir: export finds the record
    beside it (the model's name, its classes) with no --model, and --eval
    checks a contradicting --model against it."""
    train_dir = tmp_path / "train"
    write_checkpoint("cifar_cnn", str(train_dir), np.random.RandomState(0))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")

    def run(*args, module):
        return subprocess.run(command(*args, module=module), cwd=train_dir, env=env,
                              capture_output=True, text=True, timeout=240)
    exported = run("--checkpoint=ckpt-1", "--output=m.keras", module="towertrain.export")
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert (train_dir / "m.keras").exists()
    evaluated = run("--eval", "--checkpoint=ckpt-1", "--model=trivial", "--device=cpu",
                    module="towertrain")
    assert evaluated.returncode == 2
    assert _error_lines(evaluated.stderr)[-1].endswith(
        "was trained with --model=cifar_cnn; drop --model or use another --train_dir"), \
        evaluated.stderr


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_stock_lrn_matches_the_layer(data_format):
    # Inputs large enough that the normalization is far from the identity (at
    # activations ~1, alpha=1e-4 would hide a wrong window or axis).
    import keras
    from towertrain.state import export
    from towertrain.models import LocalResponseNormalization
    shape = (12, 5, 5) if data_format == "channels_first" else (5, 5, 12)
    inputs = keras.Input(shape)
    layer = LocalResponseNormalization(data_format, name="norm1")
    keras.Model(inputs, layer(inputs))
    x = np.random.RandomState(0).normal(0.0, 30.0, (2,) + shape).astype(np.float32)
    want = np.asarray(layer(x))
    assert np.abs(want / x - 1.0).max() > 0.3
    np.testing.assert_allclose(np.asarray(export._stock_lrn(layer)(x)), want, rtol=1e-5)


def test_export_of_a_model_a_script_registered_says_to_export_from_that_script(tmp_path):
    """`python -m towertrain.export` of a run of a register_model model said
    'unknown model'; from the registering process (here: this one) it works."""
    from towertrain.state import export
    train_dir = str(tmp_path / "train")
    write_checkpoint("ckpt_tiny", train_dir, np.random.RandomState(0))  # helpers' registration
    done = _cli(f"--train_dir={train_dir}", f"--output={tmp_path / 'm.keras'}")
    assert done.returncode == 2
    assert _error_lines(done.stderr) == [
        f"towertrain.export: error: --train_dir={train_dir} was trained with "
        "--model=ckpt_tiny, which is not one of towertrain's models (a script registered it "
        "with towertrain.register_model, and this process has not); export it from that "
        "script: after its register_model call, run towertrain.commands.export.run() with "
        "these flags, or call towertrain.state.export.export(train_dir=..., output=...)"]
    export.export(train_dir=train_dir, output=str(tmp_path / "m.keras"))
    assert (tmp_path / "m.keras").exists()
