"""Eval reports what it says it reports: the eval split of --data_dir, every
example once, checked against an independent computation (the exported
.keras model in stock Keras on records decoded with numpy)."""
import os
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.engine.evaluation import evaluator as evaluation
from towertrain.state import export
from towertrain.input_pipeline import cifar10, imagenet, queue_input
from towertrain.input_pipeline.arrays import InputError

from helpers import cifar_files
from helpers.data_files import imagenet_dir  # noqa: F401 - a fixture
import helpers.cli

NUM_TRAIN, NUM_TEST = 320, 97
DEVICES = ["--device=cpu", "--num_gpus=2"]


def train_in_process(**settings):
    """A train_dir as a CLI training run leaves it (the CLI runs this same
    Trainer.train), for tests whose claim is about a later CLI call; ~4 s less
    than a subprocess that imports TensorFlow."""
    trainer = Trainer(Params(model="trivial", device="cpu", num_gpus=2, **settings))
    try:
        trainer.train(write=lambda line: None)
    finally:
        trainer.close()


def cli(*args, check=True):
    return helpers.cli.run_cli(*args, timeout=600, check=check)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """cifar_cnn trained for 4 epochs (5 steps each) through the CLI on the
    learnable set, with eval during training every 10 steps."""
    root = tmp_path_factory.mktemp("trust_eval")
    data_dir = cifar_files.write_dataset(str(root / "data"), NUM_TRAIN, NUM_TEST)
    train_dir = str(root / "train")
    done = cli("--model=cifar_cnn", *DEVICES, "--variable_update=replicated",
               f"--data_dir={data_dir}", f"--train_dir={train_dir}", "--num_epochs=4",
               "--batch_size=32", "--optimizer=momentum", "--init_learning_rate=0.01",
               "--eval_during_training_every_n_steps=10")
    return data_dir, train_dir, done.stdout


@pytest.mark.slow
def test_cli_eval_scores_the_test_file_like_stock_keras_on_numpy_records(trained, tmp_path):
    data_dir, train_dir, _ = trained
    out = cli("--eval", *DEVICES, f"--data_dir={data_dir}", f"--train_dir={train_dir}").stdout
    assert re.search(rf"^Eval data:\s+cifar10 test_batch.bin \({NUM_TEST} examples",
                     out, re.M), out
    line = re.search(r"^Accuracy @ 1 = (\d\.\d+) Accuracy @ 5 = \d\.\d+ \(step 20\) "
                     rf"images/sec: [\d.]+ \[{NUM_TEST} examples, cifar10 test_batch.bin\]$",
                     out, re.M)
    assert line, out
    reported = float(line.group(1))

    exported = str(tmp_path / "model.keras")
    # The stock-Keras side: towertrain.state.export as a library call (its command line
    # is test_export's subject), then Keras alone loads and predicts.
    export.export(train_dir=train_dir, output=exported)
    model = keras.saving.load_model(exported)
    images, labels = cifar_files.read_test_split(data_dir)
    predicted = np.argmax(model.predict(images, verbose=0), axis=1)
    correct = int(np.sum(predicted == labels))
    assert abs(round(reported * NUM_TEST) - correct) <= 1, (reported, correct)
    assert correct / NUM_TEST > 0.5, correct  # well above chance (0.1): a real result


@pytest.mark.slow
def test_eval_during_training_reads_the_test_file(trained):
    _, _, out = trained
    evals = re.findall(r"^Accuracy @ 1 = .* \(step (\d+)\) .*\[(\d+) examples, (.*)\]$",
                       out, re.M)
    assert [int(step) for step, _, _ in evals] == [10, 20]
    assert all(int(n) == NUM_TEST and split == "cifar10 test_batch.bin"
               for _, n, split in evals), evals
    assert re.search(rf"^Eval data:\s+cifar10 test_batch.bin \({NUM_TEST} examples", out, re.M)


def test_missing_test_split_is_an_error_naming_the_file(tmp_path):
    data_dir = cifar_files.write_dataset(str(tmp_path / "data"), 40, 10)
    os.remove(os.path.join(data_dir, "test_batch.bin"))
    train_dir = str(tmp_path / "train")
    common = ["--model=trivial", *DEVICES, f"--data_dir={data_dir}", "--batch_size=4"]
    during = cli(*common, f"--train_dir={train_dir}", "--num_batches=4",
                 "--eval_during_training_every_n_steps=2", check=False)
    assert during.returncode == 2
    assert "test_batch.bin" in during.stderr and "Accuracy" not in during.stdout
    assert not os.path.exists(os.path.join(train_dir, "checkpoint"))  # failed before training
    train_in_process(data_dir=data_dir, batch_size=4, train_dir=train_dir, num_batches=2)
    evaluated = cli("--eval", *DEVICES, f"--data_dir={data_dir}",
                    f"--train_dir={train_dir}", check=False)
    assert evaluated.returncode == 2, evaluated.stdout
    assert re.search(r"^towertrain: error: .*test_batch.bin", evaluated.stderr, re.M)
    assert "Accuracy" not in evaluated.stdout


def test_synthetic_eval_says_synthetic(tmp_path):
    train_dir = str(tmp_path / "train")
    train_in_process(train_dir=train_dir, num_batches=2, batch_size=4)
    out = cli("--eval", *DEVICES, f"--train_dir={train_dir}", "--eval_batch_size=3").stdout
    assert re.search(r"^Eval data:\s+synthetic \(60 examples, batches of 6\)", out, re.M), out
    assert re.search(r"^Accuracy @ 1 = .*\[60 examples, synthetic\]$", out, re.M), out
    # Training's facts are left out of an evaluation's header (it said
    # 'Variables: parameter_server').
    assert not re.search(r"^(Variables|Weight decay|Optimizer):", out, re.M), out


def test_eval_batch_size_sets_the_eval_batches_and_counts_stay_exact(tmp_path):
    data_dir = cifar_files.write_dataset(str(tmp_path), 20, 23)
    params = Params(model="trivial", device="cpu", num_gpus=2, data_dir=data_dir,
                    batch_size=4, eval_batch_size=5, num_batches=1)
    trainer = Trainer(params)
    data = evaluation.eval_data_for(trainer.input, trainer.plan.batches.eval_per_process,
                                    trainer.plan.outputs)
    sizes = [int(labels.shape[0]) for _, labels in data.dataset]
    assert sizes == [10, 10, 3] and data.num_examples == 23
    assert trainer.evaluate(data).num_examples == 23
    trainer.close()


def test_eval_reads_the_test_records_in_file_order_with_eval_preprocessing(tmp_path):
    data_dir = cifar_files.write_dataset(str(tmp_path), 20, 23)
    data = cifar10.eval_data(data_dir, batch_size=8)
    images = np.concatenate([x.numpy() for x, _ in data.dataset])
    labels = np.concatenate([y.numpy() for _, y in data.dataset])
    expected_images, expected_labels = cifar_files.read_test_split(data_dir)
    np.testing.assert_array_equal(labels, expected_labels)
    np.testing.assert_allclose(images, expected_images, atol=1e-4)  # no crop, no flip


def test_imagenet_eval_reads_validation_shards_in_file_order(imagenet_dir):  # noqa: F811
    with tf.io.TFRecordWriter(str(imagenet_dir / "validation-00001-of-00002")) as w:
        from helpers.data_files import example as _example, solid as _solid
        for label in (1, 2, 3):
            w.write(_example(_solid((90, 90, 90)), label))
    data = imagenet.eval_data(str(imagenet_dir), batch_size=2, image_size=16, num_classes=4)
    labels = np.concatenate([y.numpy() for _, y in data.dataset]).tolist()
    assert labels == [2, 3, 0, 1, 2]  # shard 0 (labels 3, 4), then shard 1; offset 1
    assert data.num_examples == 5 and "validation" in data.description
    (imagenet_dir / "validation-00000-of-00001").unlink()
    (imagenet_dir / "validation-00001-of-00002").unlink()
    with pytest.raises(InputError, match=r"validation-\*"):
        imagenet.eval_data(str(imagenet_dir), batch_size=2, image_size=16)


def test_queue_input_evaluates_the_test_file_too(tmp_path):
    data_dir = cifar_files.write_dataset(str(tmp_path), 20, 23)
    source = queue_input.from_data_dir("cifar10", data_dir, (32, 32, 3), global_batch=4)
    data = source.eval_data(6)
    assert data.num_examples == 23 and data.description == "cifar10 test_batch.bin"


def test_independent_mode_evaluates_tower_0s_copy_and_says_so():
    params = Params(model="trivial", device="cpu", num_gpus=2, batch_size=4, num_batches=3,
                    num_warmup_batches=0, variable_update="independent",
                    init_learning_rate=0.5)
    trainer = Trainer(params)
    for _ in range(3):
        trainer.step()
    copies = trainer.variables.trainable_copies()
    assert not np.allclose(copies[0][0].numpy(), copies[1][0].numpy())  # they drifted apart
    data = trainer.input.eval_data(6)
    evaluator = evaluation.Evaluator(trainer.model, trainer.variables, trainer.devices)
    got = evaluator.evaluate(data, keep_logits=True).logits
    trainer.sync_model()  # the Keras model now holds tower 0's copy
    for kept, tower_0 in zip(trainer.model.trainable_variables, copies[0]):
        np.testing.assert_array_equal(kept.numpy(), tower_0.numpy())  # not tower 1's
    images = np.concatenate([x.numpy() for x, _ in data.dataset])
    np.testing.assert_allclose(got, trainer.model.predict(images, verbose=0), atol=1e-5)
    assert "independent mode: scores tower 0's copy" in evaluation.describe(data, evaluator)


def test_an_input_without_an_eval_split_is_an_error_not_a_stand_in():
    rng = np.random.default_rng(0)
    images = rng.standard_normal((32, 32, 32, 3)).astype(np.float32)
    labels = rng.integers(0, 10, 32).astype(np.int32)
    params = Params(model="trivial", device="cpu", num_gpus=2, num_batches=4,
                    num_warmup_batches=0, eval_during_training_every_n_steps=2)
    from towertrain.input_pipeline import from_arrays
    trainer = Trainer(params, input_source=from_arrays(images, labels, 8))
    with pytest.raises(InputError, match="cannot evaluate: .*has no eval split"):
        trainer.train(write=lambda line: None)
    assert trainer.global_step() == 0  # refused before any step
    with pytest.raises(InputError, match="has no eval split"):
        trainer.evaluate()
