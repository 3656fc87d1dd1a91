"""Every example in examples/ runs at tiny size (TOWERTRAIN_TINY=1) in a fresh
process, as a user runs it, and prints what shows it worked."""
import ast
import glob
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/<wing>/this file
EXPECTED = {
    "keras_cifar10_cnn.py": ["total images/sec:", "predicted classes:"],
    "multi_output_loss.py": ["step 4: loss", "predicted classes:"],
    # request_stop really ends the run early (checked below: steps < total).
    "custom_callback.py": ["LossHistory: stopped early: loss", "Received loss"],
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
    if name == "custom_callback.py":
        ran, total = map(int, re.search(r"LossHistory: (\d+) of (\d+) steps",
                                        done.stdout).groups())
        assert ran < total, f"the callback's request_stop did not stop the run: {ran} of {total}"


def private_uses(source):
    """towertrain names outside the public API (towertrain.__all__) that
    `source` imports or reads."""
    import towertrain
    public = set(towertrain.__all__)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names
                      if a.name.startswith("towertrain.")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("towertrain"):
            if node.module != "towertrain":
                found.append(node.module)
            else:
                found += [a.name for a in node.names if a.name not in public]
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "towertrain" and node.attr not in public):
            found.append(f"towertrain.{node.attr}")
    return found


def test_examples_use_only_the_public_api():
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.py"))):
        with open(path, encoding="utf-8") as f:
            source = f.read()
        assert not private_uses(source), (os.path.basename(path), private_uses(source))
    # The check is live.
    assert private_uses("from towertrain import checkpoint as c\n")
    assert private_uses("import towertrain.state.checkpoint\n")
    assert private_uses("import towertrain\ntowertrain.devices.ensure_logical_cpus(2)\n")
