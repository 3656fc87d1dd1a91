"""The docs stay true: every ```python block in README.md and docs/*.md runs
(each using towertrain in a fresh process, at tiny size; some must print what
they promise), multi-device CPU blocks configure their devices, and a fenced block in any
other language fails until handled. Shell commands: test_doc_commands.py;
the flag reference: test_flag_reference.py."""
import ast
import glob
import os
import re
import subprocess
import sys

import pytest

from helpers.doc_blocks import (HANDLED_LANGUAGES, documents, fenced_blocks,  # noqa: F401
                                python_blocks)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/<wing>/this file

# Tiny-size harness: a registered model (Params(model=NAME)) trains on batches
# of 2 per device. Step counts and loops stay as written, so blocks keep their
# own sizes small: a block whose own loop leaves train() nothing to do (and its
# callback nothing to print) fails here as it would for a reader. Blocks may
# use the placeholders below (my_keras_model, images, labels, build_fn)
# without defining them; they are defined after the block's own
# towertrain.use_logical_cpus(...) line (at the top if it has none): the
# harness never configures devices itself, so a block that forgets to is
# caught.
TINY_PRELUDE = '''
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import towertrain
_Params = towertrain.Params
def _tiny_params(**kw):
    if kw.get("model", "trivial") != "trivial":
        kw.setdefault("batch_size", 2)
    return _Params(**kw)
towertrain.Params = _tiny_params
'''
PLACEHOLDERS = '''
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

# What some blocks must print: (document, a line that identifies the block,
# a regular expression its stdout must match). Each must match one block.
EXPECTED_OUTPUT = [
    # The library guide's first callback really runs inside train() (after the manual steps).
    ("docs/library.md", "class PrintLoss(towertrain.Callback):", r"PrintLoss: step 20, loss \d"),
    ("docs/library.md", "class PrintLoss(towertrain.Callback):", r"PrintLoss: step 40, loss \d"),
    # The README's library example trains and says how far.
    ("README.md", "print(result.steps, result.final_loss)", r"(?m)^14 \d"),
    ("docs/library.md", "print(result.steps, result.final_loss)", r"(?m)^6 \d"),
]

BLOCKS = [(os.path.relpath(doc, ROOT), i, block) for doc in documents()
          for i, block in enumerate(python_blocks(doc))]


def harness(block):
    """The block at tiny size, with placeholders for the names it uses but never
    defines, placed after its own use_logical_cpus line if it has one."""
    used = [n for n in PLACEHOLDER_NAMES
            if re.search(rf"\b{n}\b", block) and not re.search(rf"^{n}\s*=", block, re.M)
            and not re.search(rf"^def {n}\b", block, re.M)]
    if not used:
        return TINY_PRELUDE + block
    devices = re.search(r"^towertrain\.use_logical_cpus\(.*\)[^\n]*\n", block, re.M)
    cut = devices.end() if devices else 0
    return TINY_PRELUDE + block[:cut] + PLACEHOLDERS + block[cut:]


# --- Shell commands in indented blocks ---

def test_docs_have_the_promised_pages_and_blocks():
    names = {os.path.basename(p) for p in documents()}
    assert {"concepts.md", "flags.md", "migration.md", "library.md"} <= names
    assert any(doc == "README.md" for doc, _, _ in BLOCKS)
    concepts = open(os.path.join(ROOT, "docs", "concepts.md"), encoding="utf-8").read()
    for topic in ("parameter_server", "replicated", "independent", "Staging", "Slicing",
                  "Portable checkpoints"):
        assert topic in concepts, topic
    # Every variable-update mode has its bullet saying when to pick it.
    from towertrain.config import params
    for mode in params.VARIABLE_UPDATES:
        bullet = re.search(rf"^- \*\*`{mode}`\*\*.*?(?=^- |^#|\Z)", concepts, re.S | re.M)
        assert bullet and "Pick it" in " ".join(bullet.group(0).split()), (
            f"docs/concepts.md: when to pick {mode}?")


def test_every_fenced_block_language_is_handled():
    seen = 0
    for doc in documents():
        for language, body in fenced_blocks(doc):
            seen += 1
            assert language.strip() in HANDLED_LANGUAGES, (
                f"{os.path.relpath(doc, ROOT)}: a ```{language} block that tests/test_docs.py "
                f"does not check (write it as ```python, or teach this file):\n{body[:300]}")
    assert seen == len(BLOCKS)


def _params_calls(tree):
    """(line, num_gpus) of each Params(device="cpu", num_gpus=N>1) call."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
            node.func, "id", None)
        if name != "Params":
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        device, gpus = kw.get("device"), kw.get("num_gpus")
        if (isinstance(device, ast.Constant) and device.value == "cpu"
                and isinstance(gpus, ast.Constant) and gpus.value > 1):
            found.append((node.lineno, gpus.value))
    return found


def _logical_cpu_calls(tree):
    """(line, count or None) of each towertrain.use_logical_cpus(count) call."""
    return [(node.lineno, node.args[0].value if node.args and isinstance(
                node.args[0], ast.Constant) else None)
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "use_logical_cpus"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "towertrain"]


def cpu_device_problems(source):
    """What is wrong with how `source` gets its logical CPU devices: each
    Params(device="cpu", num_gpus=N>1) needs an earlier
    towertrain.use_logical_cpus(M >= N) (the Trainer cannot add devices once
    any op has run, and building a model runs ops)."""
    tree = ast.parse(source)
    calls = _logical_cpu_calls(tree)
    problems = []
    for line, gpus in _params_calls(tree):
        if not any(at < line and (count is None or count >= gpus) for at, count in calls):
            problems.append(f"line {line}: Params(device='cpu', num_gpus={gpus}) with no "
                            f"towertrain.use_logical_cpus({gpus}) before it")
    return problems


def test_every_multi_device_cpu_example_and_block_configures_its_devices():
    sources = [(os.path.relpath(p, ROOT), open(p, encoding="utf-8").read())
               for p in sorted(glob.glob(os.path.join(ROOT, "examples", "*.py")))]
    sources += [(f"{doc} block {i}", block) for doc, i, block in BLOCKS]
    checked = 0
    for where, source in sources:
        assert not cpu_device_problems(source), (where, cpu_device_problems(source))
        checked += bool(_params_calls(ast.parse(source)))
    assert checked >= 4, checked  # the examples and the README/library blocks
    # The check is live: a block without the call is caught.
    assert cpu_device_problems("import towertrain\n"
                               "p = towertrain.Params(device='cpu', num_gpus=2)\n")
    assert cpu_device_problems("import towertrain\ntowertrain.use_logical_cpus(2)\n"
                               "p = towertrain.Params(device='cpu', num_gpus=4)\n")


def test_expected_output_names_real_blocks():
    for doc, marker, _ in EXPECTED_OUTPUT:
        assert sum(marker in block for d, _, block in BLOCKS if d == doc) == 1, (doc, marker)


@pytest.mark.parametrize("doc,index,block", BLOCKS,
                         ids=[f"{doc}#{i}" for doc, i, _ in BLOCKS])
def test_code_block_runs(doc, index, block, tmp_path, monkeypatch):
    if not re.search(r"\btowertrain\b", block):
        # No towertrain (so no devices, no Params): a fresh process would only
        # re-import TensorFlow; run it here, as its own module.
        monkeypatch.chdir(tmp_path)
        exec(compile(block, f"{doc} block {index}", "exec"), {"__name__": "__main__"})
        return
    env = dict(os.environ, TOWERTRAIN_TINY="1", TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", harness(block)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{doc} block {index}:\n{block}\n{done.stderr[-3000:]}"
    for expected_doc, marker, pattern in EXPECTED_OUTPUT:
        if expected_doc == doc and marker in block:
            assert re.search(pattern, done.stdout), (
                f"{doc} block {index} did not print {pattern!r}:\n{done.stdout[-3000:]}")
