"""The docs stay true: docs/flags.md is the generated flag reference, and every
```python block in README.md and docs/*.md runs (each in a fresh process, at
tiny size)."""
import glob
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Tiny-size harness: every Params trains at most 2 timed steps (1 warmup) on
# small per-device batches, and long step loops run 3 times. README blocks may
# also use the placeholders it names (my_keras_model, images, labels, build_fn),
# defined after 4 logical CPU devices exist.
TINY_PRELUDE = '''
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import towertrain
_Params = towertrain.Params
def _tiny_params(**kw):
    if kw.get("num_epochs") is None:
        kw["num_batches"] = min(kw.get("num_batches") or 2, 2)
    kw["num_warmup_batches"] = min(kw.get("num_warmup_batches", 1), 1)
    if kw.get("model", "trivial") != "trivial":
        kw.setdefault("batch_size", 2)
    return _Params(**kw)
towertrain.Params = _tiny_params
'''
PLACEHOLDERS = '''
towertrain.use_logical_cpus(4)
import keras, numpy as np
def build_fn(num_classes, data_format, image_size):
    return keras.Sequential([keras.Input((image_size, image_size, 3)),
                             keras.layers.Flatten(name="flat"),
                             keras.layers.Dense(num_classes, name="logits")])
my_keras_model = build_fn(10, "NHWC", 32)
images = np.random.default_rng(0).random((128, 32, 32, 3), dtype=np.float32)
labels = np.arange(128) % 10
'''
PLACEHOLDER_NAMES = ("my_keras_model", "images", "labels", "build_fn")


def python_blocks(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def documents():
    return [os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "*.md")))


BLOCKS = [(os.path.relpath(doc, ROOT), i, block) for doc in documents()
          for i, block in enumerate(python_blocks(doc))]


def harness(block):
    """The block at tiny size, with placeholders for the names it uses but never defines."""
    block = re.sub(r"\brange\((\d{3,})\)", "range(3)", block)
    used = [n for n in PLACEHOLDER_NAMES
            if re.search(rf"\b{n}\b", block) and not re.search(rf"^{n}\s*=", block, re.M)
            and not re.search(rf"^def {n}\b", block, re.M)]
    return TINY_PRELUDE + (PLACEHOLDERS if used else "") + block


def test_flag_reference_is_current():
    done = subprocess.run([sys.executable, "-m", "towertrain.flag_reference"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(os.path.join(ROOT, "docs", "flags.md"), encoding="utf-8") as f:
        assert f.read() == done.stdout, ("docs/flags.md is stale: run python -m "
                                         "towertrain.flag_reference > docs/flags.md")


def test_flag_reference_lists_every_params_field_that_is_a_flag():
    from towertrain import flag_reference, flags, params
    text = flag_reference.markdown()
    for name in params.Params.__dataclass_fields__:
        if name in flags.FLAGS:
            assert f"`--{name}`" in text, name


def test_docs_have_the_promised_pages_and_blocks():
    names = {os.path.basename(p) for p in documents()}
    assert {"concepts.md", "flags.md", "migration.md", "library.md"} <= names
    assert any(doc == "README.md" for doc, _, _ in BLOCKS)
    concepts = open(os.path.join(ROOT, "docs", "concepts.md"), encoding="utf-8").read()
    for topic in ("parameter_server", "replicated", "independent", "Staging", "Slicing",
                  "Portable checkpoints"):
        assert topic in concepts, topic


@pytest.mark.parametrize("doc,index,block", BLOCKS,
                         ids=[f"{doc}#{i}" for doc, i, _ in BLOCKS])
def test_code_block_runs(doc, index, block, tmp_path):
    env = dict(os.environ, TOWERTRAIN_TINY="1", TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", harness(block)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{doc} block {index}:\n{block}\n{done.stderr[-3000:]}"
