"""The docs stay true (the flag reference: test_flag_reference.py): every
code block in README.md and docs/*.md is checked. ```python blocks run (each in
a fresh process, at tiny size; some must print what they promise); indented
shell blocks have every `python -m towertrain...` / `towertrain` command's flags
parsed by the real flag definitions (an unknown or misspelled flag, a bad value
or a combination Params refuses fails), the README's first training command
runs at tiny size, and the rest of each block is a command this file knows
(pip extras that exist, files that exist); indented blocks without any command
are sample output. A fenced block in any other language fails until handled."""
import ast
import glob
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

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
    # The README's own callback really runs inside train() (after the manual steps).
    ("README.md", "class PrintLoss(towertrain.Callback):", r"PrintLoss: step 20, loss \d"),
    ("README.md", "class PrintLoss(towertrain.Callback):", r"PrintLoss: step 40, loss \d"),
    ("docs/library.md", "print(result.steps, result.final_loss)", r"(?m)^6 \d"),
]

# Fenced-block languages this file knows what to do with.
HANDLED_LANGUAGES = {"python"}


def fenced_blocks(path):
    """[(language, body)] of every ``` block in a Markdown file."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^```([^\n`]*)\n(.*?)^```", text, re.S | re.M)


def python_blocks(path):
    return [body for language, body in fenced_blocks(path) if language.strip() == "python"]


def indented_blocks(path):
    """[(first line number, [lines])] of every indented code block (4 spaces,
    after a blank line, outside fenced blocks and list items)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, current, fenced, previous = [], None, False, ""
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("    ") and (current is not None or (
                not previous.strip() and not _in_list(lines, number))):
            if current is None:
                current = (number, [])
                blocks.append(current)
            current[1].append(line[4:])
        elif current is not None and not line.strip():
            continue  # a blank line inside a block
        else:
            current = None
        previous = line
    return [(number, _strip_trailing_blank(body)) for number, body in blocks]


def _in_list(lines, number):
    """Whether line `number` continues a list item (then indentation is not code)."""
    for line in reversed(lines[:number - 1]):
        if not line.strip():
            continue
        return bool(re.match(r"\s*([-*+]|\d+\.)\s", line)) or line.startswith("  ")
    return False


def _strip_trailing_blank(body):
    while body and not body[-1].strip():
        body.pop()
    return body


def documents():
    return [os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "*.md")))


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

COMMAND_START = re.compile(r"^(\w+=\S*\s+)*(python3?|pip3?|towertrain|bazel|\.ci/run)\b")
# The CLI modules whose flags a command may use: module -> how to define them.
FLAG_MODULES = {
    "towertrain": "from towertrain.config import flags as f; f.define_flags()",
    "towertrain.export": "from towertrain.commands import export; export.define_flags()",
    "towertrain.scaling": "from towertrain.commands import scaling; scaling.define_flags()",
}
# Parses each argv of one module in a fresh process (the modules' flags share
# absl's global flag set and clash): absl's parser, then Params and the
# command-line checks where the command builds Params from its flags.
PARSE_SCRIPT = '''
import json, sys
from absl import flags
{define}
from towertrain.config import flags as flags_lib
from towertrain.config import params as params_lib
results = []
for argv in json.loads(sys.argv[1]):
    flags.FLAGS.unparse_flags()
    try:
        flags.FLAGS(["prog"] + argv)
        if {builds_params}:
            flags_lib.params_from_flags()
        results.append(None)
    except (flags.Error, ValueError, params_lib.ParamsError) as err:
        results.append(f"{{type(err).__name__}}: {{err}}")
print(json.dumps(results))
'''


def logical_lines(body):
    """Shell lines with backslash continuations joined; blank lines dropped."""
    joined, pending = [], ""
    for line in body:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    if pending:
        joined.append(pending)
    return [line.strip() for line in joined if line.strip()]


def shell_blocks():
    """[(doc, line, [commands])] of the indented blocks that hold commands; each
    command is a word list (env assignments, `&&` chains split). Indented
    blocks with no command line are sample output."""
    found = []
    for doc in documents():
        for number, body in indented_blocks(doc):
            lines = logical_lines(body)
            if not any(COMMAND_START.match(line) for line in lines):
                continue
            commands = []
            for line in lines:
                if line.startswith("#"):
                    continue
                for part in line.split("&&"):
                    commands.append(shlex.split(part, comments=True))
            found.append((os.path.relpath(doc, ROOT), number, commands))
    return found


def _extras():
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "extras_require":
            return set(ast.literal_eval(node.value))
    return set()


def classify(words):
    """(kind, detail) of one shell command: ('flags', (module, args)),
    ('ok', why) or ('unknown', text)."""
    while words and re.match(r"^\w+=", words[0]):  # VAR=value prefixes
        words = words[1:]
    text = " ".join(words)
    if words[:1] == ["towertrain"]:
        return "flags", ("towertrain", words[1:])
    if words[:1] in (["python"], ["python3"]):
        if words[1:2] == ["-m"] and words[2] in FLAG_MODULES:
            return "flags", (words[2], words[3:])
        if words[1:3] == ["-m", "pytest"]:
            return "ok", "the test suite"
        if len(words) > 1 and re.match(r"^(examples|bench)/\w+\.py$", words[1]):
            return ("ok", words[1]) if os.path.exists(os.path.join(ROOT, words[1])) else (
                "unknown", f"{text}: {words[1]} does not exist")
    if words[:2] in (["pip", "install"], ["pip3", "install"]):
        extras = set()
        for word in words[2:]:
            extras |= set(re.findall(r"\[([^\]]*)\]", word)[0].split(",")) if "[" in word else set()
        missing = extras - _extras()
        return ("ok", "pip") if not missing else (
            "unknown", f"{text}: no extra {sorted(missing)} in setup.py")
    return "unknown", text


SHELL_BLOCKS = shell_blocks()


def flag_errors(module, argvs):
    """[None or the error] for each argv, parsed by `module`'s own flags."""
    script = PARSE_SCRIPT.format(define=FLAG_MODULES[module],
                                 builds_params=module != "towertrain.export")
    done = subprocess.run([sys.executable, "-c", script, json.dumps(argvs)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
                                   PYTHONPATH=ROOT + os.pathsep +
                                   os.environ.get("PYTHONPATH", "")))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


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


def test_readme_shell_blocks_are_found():
    """The README's quickstart, usage and multi-worker blocks are all checked."""
    readme = [commands for doc, _, commands in SHELL_BLOCKS if doc == "README.md"]
    flat = [" ".join(words) for commands in readme for words in commands]
    assert len(readme) >= 3, readme
    assert any("--worker_hosts" in line and "--task_index=1" in line for line in flat), flat
    assert any(line.startswith("pip install") for line in flat), flat


def test_ci_runs_exactly_the_readmes_test_command():
    """.ci/run's command is the README's second fresh-machine line."""
    with open(os.path.join(ROOT, "README.md")) as f:
        readme_test_line = [line.strip() for line in f.read().splitlines()[:12]
                            if "pytest" in line][0]
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci_lines = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert ci_lines[-1] == readme_test_line


# Commands that must fail the same check, parsed alongside the documented ones
# (one process per module: Params' checks import TensorFlow): a misspelled
# flag, a bad enum value, a combination Params refuses.
MUST_FAIL = {"towertrain": [["--model=resnet20", "--num_gpu=2"],
                            ["--variable_update=replicate"],
                            ["--num_batches=5", "--num_epochs=1"]],
             "towertrain.export": [["--outptu=m.keras"]],
             "towertrain.scaling": [["--max_device=4"]]}


def test_every_shell_command_is_known_and_its_flags_parse():
    """Every command in an indented block: flags of python -m towertrain[.export,
    .scaling] / towertrain parsed by their real definitions (and Params' checks
    where the command builds Params), the rest one of the commands this file
    knows. The MUST_FAIL commands show the check is live."""
    by_module = {module: [] for module in FLAG_MODULES}
    for doc, number, commands in SHELL_BLOCKS:
        for words in commands:
            kind, detail = classify(words)
            assert kind != "unknown", f"{doc}:{number}: a command this test cannot check: {detail}"
            if kind == "flags":
                module, args = detail
                by_module[module].append((f"{doc}:{number}", args))
    assert by_module["towertrain"]
    for module, cases in by_module.items():
        bad = MUST_FAIL[module]
        errors = flag_errors(module, [args for _, args in cases] + bad)
        for (where, args), error in zip(cases, errors):
            assert error is None, f"{where}: python -m {module} {' '.join(args)}: {error}"
        for args, error in zip(bad, errors[len(cases):]):
            assert error is not None, f"python -m {module} {' '.join(args)} was accepted"


def test_readme_first_training_command_runs_at_tiny_size(tmp_path):
    """The quickstart's training command, as written, with its step count and
    batch cut to tiny size (2 per device, 1 warmup + 2 timed steps)."""
    first = next(detail for doc, _, commands in SHELL_BLOCKS if doc == "README.md"
                 for kind, detail in map(classify, commands)
                 if kind == "flags" and detail[0] == "towertrain")
    tiny = {"num_batches": "2", "num_warmup_batches": "1", "batch_size": "2"}
    args = [arg for arg in first[1] if arg.split("=")[0].lstrip("-") not in tiny]
    args += [f"--{name}={value}" for name, value in tiny.items()]
    done = subprocess.run([sys.executable, "-m", "towertrain", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
                                   PYTHONPATH=ROOT + os.pathsep +
                                   os.environ.get("PYTHONPATH", "")))
    assert done.returncode == 0, f"python -m towertrain {' '.join(args)}\n{done.stderr[-3000:]}"
    assert "total images/sec:" in done.stdout, done.stdout[-2000:]


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
def test_code_block_runs(doc, index, block, tmp_path):
    env = dict(os.environ, TOWERTRAIN_TINY="1", TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", harness(block)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{doc} block {index}:\n{block}\n{done.stderr[-3000:]}"
    for expected_doc, marker, pattern in EXPECTED_OUTPUT:
        if expected_doc == doc and marker in block:
            assert re.search(pattern, done.stdout), (
                f"{doc} block {index} did not print {pattern!r}:\n{done.stdout[-3000:]}")
