"""export --include_preprocessing: the eval preprocessing inside the exported
model, so raw CIFAR-10 pixels score as --eval does; the input
contract is in export's --help."""
import keras
import numpy as np
import pytest

from towertrain import Params, Trainer

from helpers import cifar_files
from helpers.cli import run_cli


def _raw_test_split(data_dir):
    raw = np.fromfile(f"{data_dir}/test_batch.bin", np.uint8).reshape(
        -1, cifar_files.RECORD_BYTES)
    return raw[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), raw[:, 0].astype(np.int64)


@pytest.mark.slow
def test_exported_model_with_preprocessing_scores_raw_images_as_eval(tmp_path):
    data_dir = cifar_files.write_dataset(str(tmp_path / "data"), 96, 40, seed=3)
    train_dir = str(tmp_path / "run")
    params = Params(model="trivial", data_name="cifar10", device="cpu", data_dir=data_dir,
                    batch_size=16, num_batches=12, num_warmup_batches=0,
                    init_learning_rate=0.05, train_dir=train_dir, display_every=100)
    trainer = Trainer(params)
    trainer.train(write=lambda line: None)
    engine = trainer.evaluate()  # what --eval reports on test_batch.bin
    trainer.close()
    output = str(tmp_path / "model.keras")
    done = run_cli(f"--train_dir={train_dir}", f"--output={output}", "--include_preprocessing",
                   module="towertrain.export")
    assert done.returncode == 0, done.stderr
    images, labels = _raw_test_split(data_dir)
    model = keras.saving.load_model(output)
    logits = np.asarray(model(images.astype(np.float32), training=False))
    # The same logits as the model on numpy-standardized images: the preprocessing inside
    # equals --eval's.
    standardized, _ = cifar_files.read_test_split(data_dir)
    plain = keras.saving.load_model(output).layers[-1]
    np.testing.assert_allclose(logits, np.asarray(plain(standardized, training=False)),
                               atol=1e-4)
    assert np.mean(logits.argmax(-1) == labels) == engine.top1


def test_export_help_states_the_input_contract():
    done = run_cli("--help", module="towertrain.export")
    assert done.returncode == 0
    assert "preprocessed as for --eval" in done.stdout
    assert "--include_preprocessing" in done.stdout


def test_include_preprocessing_on_an_imagenet_run_is_refused_and_writes_nothing(tmp_path):
    # Its eval preprocessing decodes and crops JPEGs of any size: nothing fixed
    # to put in front of the model (cifar10's standardization would be wrong).
    train_dir, output = str(tmp_path / "run"), tmp_path / "model.keras"
    trained = run_cli("--model=lenet", "--data_name=imagenet", "--device=cpu",
                      "--batch_size=2", "--num_batches=1", "--num_warmup_batches=0",
                      f"--train_dir={train_dir}")
    assert trained.returncode == 0, trained.stderr[-2000:]
    refused = run_cli(f"--train_dir={train_dir}", f"--output={output}",
                      "--include_preprocessing", module="towertrain.export")
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert refused.stderr.startswith("towertrain.export: error: --include_preprocessing: only "
                                     "for cifar10 runs (this one is imagenet"), refused.stderr
    assert not output.exists()
