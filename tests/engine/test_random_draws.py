"""Every random draw of a step is a function of (seed, step, slot): an update of
2 accumulated micro-batches draws, with dropout and random crops, what one
step on the two batches concatenated over 2 towers draws; and the header says
where a run holds randomness the step does not set."""
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.input_pipeline import from_arrays, from_dataset

from helpers import cifar_files
from helpers import cluster_runs as runs
from helpers.cli import driver

DRIVER = driver("train", deterministic=True)


def _train(data_dir, train_dir, *flags):
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, "--model=cifar_cnn", "--distortions", "--device=cpu",
         "--variable_update=replicated", "--optimizer=momentum", "--init_learning_rate=0.01",
         "--num_warmup_batches=0", "--num_batches=3", "--batch_size=4",
         f"--data_dir={data_dir}", f"--train_dir={train_dir}", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=runs.env())


@pytest.mark.slow  # two CLI processes (in parallel)
def test_accumulated_micro_batches_with_dropout_equal_one_step_on_them_concatenated(tmp_path):
    data_dir = cifar_files.write_dataset(str(tmp_path / "data"), 40, 8)
    # 1 device, 2 micro-batches of 4 per update; 2 devices, one batch of 8 per
    # step split 4 + 4: micro-batch m on tower 0 and tower m of one step share
    # their slot (micro-batch x towers + tower), so their dropout masks; the
    # crops and flips follow the examples.
    accumulated = _train(data_dir, str(tmp_path / "accumulated"), "--num_gpus=1",
                         "--gradient_accumulation_steps=2")
    concatenated = _train(data_dir, str(tmp_path / "concatenated"), "--num_gpus=2")
    for proc in (accumulated, concatenated):
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out[-3000:]
    runs.assert_same_model(str(tmp_path / "accumulated"), str(tmp_path / "concatenated"))


class Noise(keras.layers.Layer):
    """A user's random layer drawing without a Keras SeedGenerator."""

    def call(self, x, training=False):
        return x + tf.random.uniform(tf.shape(x)) if training else x


def _header(model=None, input_source=None):
    params = Params(device="cpu", num_gpus=2, num_batches=1, num_warmup_batches=0,
                    **({} if model is not None else {"model": "cifar_cnn"}))
    trainer = Trainer(params, model=model, input_source=input_source)
    try:
        return dict(trainer.header_info())
    finally:
        trainer.close()


def _dense(*layers):
    return keras.Sequential([keras.Input((4,)), *layers, keras.layers.Dense(3)])


def test_the_header_says_a_run_is_exact_only_on_its_topology_where_it_cannot_be_more():
    images = np.ones((8, 4), np.float32)
    labels = np.zeros(8, np.int32)
    # Keras' own random layers and towertrain's inputs: nothing to say.
    assert "Randomness" not in _header()
    assert "Randomness" not in _header(_dense(keras.layers.Dropout(0.5)),
                                       from_arrays(images, labels, 8))
    said = _header(_dense(Noise()), from_arrays(images, labels, 8))["Randomness"]
    assert said == ("your layer class Noise: exact only on the same topology "
                    "(docs/checkpoints.md, 'Randomness and exactness')"), said
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    said = _header(_dense(), from_dataset(dataset, global_batch=8))["Randomness"]
    assert said.startswith("your input (from_dataset): exact only on the same topology"), said
