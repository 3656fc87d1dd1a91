"""Export into a folder that does not exist yet creates it:
the path check accepted it, then Keras failed with a FileNotFoundError
traceback. Through the export command, and through Trainer.export."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer

import helpers.cli
from helpers.cli import run_cli


@pytest.mark.slow
def test_export_command_creates_the_output_folder(tmp_path):
    train_dir, output = tmp_path / "run", tmp_path / "new" / "deeper" / "model.keras"
    run_cli("--model=trivial", "--device=cpu", "--batch_size=2", "--num_batches=1",
            "--num_warmup_batches=0", f"--train_dir={train_dir}", check=True)
    done = run_cli(f"--train_dir={train_dir}", f"--output={output}",
                   module="towertrain.export")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout == f"Exported {output}\n"
    exported = keras.saving.load_model(str(output))
    reader = tf.train.load_checkpoint(str(train_dir))
    np.testing.assert_array_equal(
        exported.get_layer("logits").kernel.numpy(),
        reader.get_tensor("model/logits__kernel/.ATTRIBUTES/VARIABLE_VALUE"))


def test_trainer_export_creates_the_output_folder(tmp_path):
    trainer = Trainer(Params(model="trivial", device="cpu", batch_size=2, num_batches=1,
                             num_warmup_batches=0, display_every=100))
    try:
        trainer.train(write=helpers.cli.quiet)
        path = tmp_path / "new" / "model.keras"
        trainer.export(str(path))
    finally:
        trainer.close()
    np.testing.assert_array_equal(keras.saving.load_model(str(path)).get_layer(
        "logits").kernel.numpy(), trainer.model.get_layer("logits").kernel.numpy())
