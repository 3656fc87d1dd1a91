"""Every example in examples/ runs at tiny size (TOWERTRAIN_TINY=1) in a fresh
process, as a user runs it, and prints what shows it worked."""
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPECTED = {
    "keras_cifar10_cnn.py": ["total images/sec:", "predicted classes:"],
    "multi_output_loss.py": ["step 4: loss", "predicted classes:"],
    "custom_callback.py": ["LossHistory: 5 steps"],
    "finetune_new_head.py": ["restored equals pretrained: True",
                             "backbone unchanged by fine-tuning: True"],
}


def run_example(path, *args):
    env = dict(os.environ, TOWERTRAIN_TINY="1", TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([sys.executable, path, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_every_example_is_listed():
    found = {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "examples", "*.py"))}
    assert found == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_at_tiny_size(name, tmp_path):
    args = [f"--train_dir={tmp_path}"] if name == "finetune_new_head.py" else []
    done = run_example(os.path.join("examples", name), *args)
    assert done.returncode == 0, done.stderr[-3000:]
    for line in EXPECTED[name]:
        assert line in done.stdout, (line, done.stdout[-2000:])
