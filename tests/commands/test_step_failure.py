"""TensorFlow's error inside a training step, at the command line: one line
naming the model, the op's node and what its kernel said, exit status 2,
the last checkpoint kept; not TensorFlow's traceback."""
import re
import subprocess
import sys

import helpers.cli
from helpers.checkpoint_files import committed_steps

# A registered model whose layer reshapes each example's 8 x 8 x 3 = 192
# values into rows of 7 from step 3 on: shapes known only when it runs.
SCRIPT = """
import sys
import keras
import tensorflow as tf
import towertrain
from towertrain.commands import train

class RowsOfSevenFromStep3(keras.layers.Layer):
    def build(self, shape):
        self.calls = self.add_weight(shape=(), initializer="zeros", trainable=False)
    def call(self, x):
        width = tf.where(self.calls >= 2.0, 7, 192)
        self.calls.assign_add(1.0)
        return tf.reshape(x, tf.stack([-1, width]))[:, :1] * 0 + tf.reshape(x, [-1, 192])

def build(num_classes, data_format, image_size):
    return keras.Sequential([keras.Input((image_size, image_size, 3)),
                             RowsOfSevenFromStep3(name="rows"),
                             keras.layers.Dense(num_classes, name="logits")], name="rows")

towertrain.register_model("rows_of_seven", build, default_image_size=8, default_batch_size=2,
                          default_dataset="cifar10")
sys.argv = ["towertrain"] + sys.argv[1:]
train.run()
"""


def test_a_kernel_error_in_a_step_is_one_line_naming_model_and_node(tmp_path):
    train_dir = str(tmp_path / "run")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, "--model=rows_of_seven", "--device=cpu",
         "--num_batches=6", "--num_warmup_batches=0", "--save_model_steps=1",
         f"--train_dir={train_dir}", "--staging_depth=0"],
        capture_output=True, text=True, timeout=240, env=helpers.cli.unbuffered_env())
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    line = done.stderr.strip().splitlines()[-1]
    assert re.fullmatch(
        r"towertrain: error: --model=rows_of_seven: a training step failed in TensorFlow at "
        r"node \S*rows\S*Reshape\S*: Input to reshape is a tensor with 384 values, but the "
        r"requested shape requires a multiple of 7 \(InvalidArgumentError\); "
        rf"--train_dir={re.escape(train_dir)} keeps its last checkpoint", line), line
    assert committed_steps(train_dir)[-1] == 2  # the steps before it, saved and whole
