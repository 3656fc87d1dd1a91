"""Every shell command in README.md and docs/*.md is real: each block passes
`bash -n`; each `python -m towertrain...` / `towertrain` command's flags are
parsed by the real flag definitions (an unknown or misspelled flag, a bad
value or a combination Params refuses fails; a relative --data_dir is a tiny
CIFAR-10 stand-in), the README's first training command runs at tiny size and
prints what every sample output shows (numbers masked), .ci/run is the
README's test line, and the rest of each block is a command this file knows
(pip extras that exist, files that exist, the documented download)."""
import ast
import json
import os
import re
import subprocess
import sys

from helpers.cifar_files import write_dataset
from helpers.doc_blocks import ROOT, documents, indented_blocks, sample_outputs, shell_blocks


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


def _extras():
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "extras_require":
            return {key.value for key in node.value.keys}  # values may name lists
    return set()


def classify(words):
    """(kind, detail) of one shell command: ('flags', (module, args)),
    ('ok', why) or ('unknown', text)."""
    while words and re.match(r"^\w+=", words[0]):  # VAR=value prefixes
        words = words[1:]
    if words[:1] == ["srun"]:  # a Slurm step: its options, then the command
        words = words[1:]
        while words and words[0].startswith("-"):
            words = words[1:]
    text = " ".join(words)
    if words[1:3] == ["-m", "towertrain.launch"]:
        return "flags", ("towertrain", _launched_flags(words[3:]))
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
    if words[:1] == ["mkdocs"] and words[1:] in (["serve"], ["build", "--strict"]):
        return ("ok", "mkdocs") if os.path.exists(os.path.join(ROOT, "mkdocs.yml")) else (
            "unknown", f"{text}: no mkdocs.yml")
    if words[:2] == ["curl", "-O"] and words[2:] == [CIFAR10_BINARY]:
        return "ok", "the CIFAR-10 download"
    if words == ["tar", "xzf", os.path.basename(CIFAR10_BINARY)]:
        return "ok", "unpacking the CIFAR-10 download"
    if words[:3] == ["apt-get", "install", "-y"] and words[3:] == ["chromium"]:
        return "ok", "Chromium, for the render test"
    if words[:2] in (["pip", "install"], ["pip3", "install"]):
        extras = set()
        for word in words[2:]:
            extras |= set(re.findall(r"\[([^\]]*)\]", word)[0].split(",")) if "[" in word else set()
        missing = extras - _extras()
        return ("ok", "pip") if not missing else (
            "unknown", f"{text}: no extra {sorted(missing)} in setup.py")
    return "unknown", text


SHELL_BLOCKS = shell_blocks()
# The binary CIFAR-10 the getting-started page downloads (its home page:
# https://www.cs.toronto.edu/~kriz/cifar.html).
CIFAR10_BINARY = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"


def _launched_flags(args):
    """A worker's flags under `python -m towertrain.launch <args>`: the
    launcher's own options checked by its parser, then the flags it adds."""
    from towertrain.commands import launch
    options, flags = launch.parse(args)
    if options.num_workers == 1:
        return flags
    hosts = ",".join(f"127.0.0.1:{2222 + k}" for k in range(options.num_workers))
    added = [f"--worker_hosts={hosts}", "--task_index=0", "--cluster_source=flags"]
    if not any(f.startswith("--variable_update=") for f in flags):
        added.append("--variable_update=collective_all_reduce")
    return flags + added


def flag_errors(module, argvs, cwd=ROOT):
    """[None or the error] for each argv, parsed by `module`'s own flags, in `cwd`."""
    script = PARSE_SCRIPT.format(define=FLAG_MODULES[module],
                                 builds_params=module != "towertrain.export")
    done = subprocess.run([sys.executable, "-c", script, json.dumps(argvs)], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
                                   PYTHONPATH=ROOT + os.pathsep +
                                   os.environ.get("PYTHONPATH", "")))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


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
    # Chromium (the docs render test) and the CUDA-built TensorFlow (the GPU
    # kernel-coverage test) come first, as the README says.
    assert any("apt-get install" in line and "chromium" in line for line in ci_lines[:-1])
    assert "bash .ci/cuda_tf_venv" in ci_lines[:-1]


# Commands that must fail the same check, parsed alongside the documented ones
# (one process per module: Params' checks import TensorFlow): a misspelled
# flag, a bad enum value, a combination Params refuses.
MUST_FAIL = {"towertrain": [["--model=resnet20", "--num_gpu=2"],
                            ["--variable_update=replicate"],
                            ["--num_batches=5", "--num_epochs=1"]],
             "towertrain.export": [["--outptu=m.keras"]],
             "towertrain.scaling": [["--max_device=4"]]}


def pod_specs():
    """[(doc, line, command words, environment)] of the indented blocks that are a
    Kubernetes container's YAML (`env:` ... `command: [...]`), parsed as YAML;
    a TF_CONFIG value must be JSON."""
    import yaml  # MkDocs' own dependency
    found = []
    for doc in documents():
        for number, body in indented_blocks(doc):
            if body and body[0].strip() == "env:":
                spec = yaml.safe_load("\n".join(body))
                env = {item["name"]: item["value"] for item in spec["env"]}
                if "TF_CONFIG" in env:
                    json.loads(env["TF_CONFIG"])
                found.append((os.path.relpath(doc, ROOT), number,
                              [str(word) for word in spec["command"]], env))
    return found


def _data_dirs_for(cases, where):
    """Each relative --data_dir of `cases` made under `where` as a tiny CIFAR-10
    binary set (Params checks that the directory holds the files)."""
    for _, args in cases:
        for arg in args:
            if arg.startswith("--data_dir=") and not os.path.isabs(arg.split("=", 1)[1]):
                data_dir = os.path.join(where, arg.split("=", 1)[1])
                if not os.path.isdir(data_dir):
                    write_dataset(data_dir, 10, 4)


def test_every_shell_block_passes_bash_syntax_check():
    """`bash -n` on every indented block that holds a command: a quote left
    open, a stray `&&` or a broken continuation fails here."""
    blocks = [(doc, number, "\n".join(body)) for doc, number, commands in SHELL_BLOCKS
              for n, body in indented_blocks(os.path.join(ROOT, doc)) if n == number]
    assert len(blocks) == len(SHELL_BLOCKS)
    for doc, number, text in blocks + [("planted", 0, "python -m towertrain --model='x")]:
        done = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
        if doc == "planted":
            assert done.returncode != 0, "bash -n accepted an open quote"
        else:
            assert done.returncode == 0, f"{doc}:{number}: {done.stderr}"


def test_every_shell_command_is_known_and_its_flags_parse(tmp_path):
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
    for doc, number, words, _ in pod_specs():  # a pod's command: TF_CONFIG gives the cluster
        kind, (module, args) = classify(words)
        assert kind == "flags", f"{doc}:{number}: {words}"
        by_module[module].append((f"{doc}:{number}", args))
    assert by_module["towertrain"]
    _data_dirs_for(by_module["towertrain"], tmp_path)
    for module, cases in by_module.items():
        bad = MUST_FAIL[module]
        errors = flag_errors(module, [args for _, args in cases] + bad, cwd=tmp_path)
        for (where, args), error in zip(cases, errors):
            assert error is None, f"{where}: python -m {module} {' '.join(args)}: {error}"
        for args, error in zip(bad, errors[len(cases):]):
            assert error is not None, f"python -m {module} {' '.join(args)} was accepted"


def output_shape(lines):
    """What a run's output looks like with every number masked: (the header's
    lines, the other lines in order, the set of step-line shapes). The step
    lines' count depends on the step count, their form does not."""
    masked = [re.sub(r"\d+(\.\d+)?", "N", line.rstrip()) for line in lines if line.strip()]
    cut = masked.index("==========") if "==========" in masked else len(masked)
    steps = {line for line in masked[cut:] if re.match(r"^N\t", line)}
    others = [line for line in masked[cut:] if not re.match(r"^N\t", line)]
    return masked[:cut], others, steps


def test_output_shape_masks_numbers_only():
    """The comparison is live: a missing header line or a step line of another
    form is a difference; other numbers are not."""
    sample = ["TensorFlow:  2.21.0", "Threads:     intra-op 1 per process", "==========",
              "11\timages/sec: 531.5 +/- 0.0 (jitter = 0.0)\t1.460\twait 0%", "----",
              "total images/sec: 576.59"]
    assert output_shape(sample) == output_shape(
        [line.replace("531.5", "7.25").replace("2.21.0", "2.22.1") for line in sample])
    assert output_shape(sample) != output_shape(sample[:1] + sample[2:])
    assert output_shape(sample) != output_shape(
        [line.replace("\twait 0%", "") for line in sample])


def test_readme_first_training_command_runs_at_tiny_size(tmp_path):
    """The quickstart's training command, as written, with its step count and
    batch cut to tiny size (2 per device, 1 warmup + 2 timed steps), prints what
    each documented sample output shows, every number masked: the same header
    lines in order, the same other lines, step lines of the same form."""
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
    samples = sample_outputs()
    assert any(doc == "README.md" for doc, _, _ in samples), "the README shows no sample output"
    printed = output_shape(done.stdout.splitlines())
    for doc, number, body in samples:
        header, others, steps = output_shape(body)
        assert header == printed[0], (f"{doc}:{number}: the sample's header is not what the "
                                      f"command prints (numbers masked):\n{header}\n{printed[0]}")
        assert others == printed[1], f"{doc}:{number}:\n{others}\n{printed[1]}"
        assert len(steps) == 1 and printed[2] == steps, f"{doc}:{number}: {steps} {printed[2]}"


def _cli(words, cwd, **replace):
    """Runs a documented `python -m ...` command in `cwd`, with the flags in
    `replace` set to other values (or added)."""
    args = [w for w in words[3:] if w.split("=")[0].lstrip("-") not in replace]
    args += [f"--{name}={value}" for name, value in replace.items()]
    done = subprocess.run([sys.executable, "-m", words[2], *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
                                   PYTHONPATH=ROOT + os.pathsep +
                                   os.environ.get("PYTHONPATH", "")))
    assert done.returncode == 0, f"{' '.join(words)}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout


def test_getting_started_trains_evaluates_and_exports_on_the_download(tmp_path):
    """The getting-started page's three steps after the download: its train,
    eval and export commands as written (train with the trivial model, 4 per
    device, one epoch) on a CIFAR-10 binary stand-in where `tar xzf` puts the
    real one: eval scores every test example, export writes the .keras file."""
    words = [w for doc, _, commands in SHELL_BLOCKS if doc == "docs/getting-started.md"
             for w in commands if w[:2] == ["python", "-m"]]
    train, = [w for w in words if "--data_dir=cifar-10-batches-bin" in w and "--eval" not in w]
    evaluate, = [w for w in words if "--eval" in w]
    export, = [w for w in words if w[2] == "towertrain.export"]
    data_dir = write_dataset(str(tmp_path / "cifar-10-batches-bin"), 40, 12, train_files=5)
    with open(os.path.join(data_dir, "batches.meta.txt"), "w") as f:
        f.write("\n".join(["airplane", "automobile", "bird", "cat", "deer", "dog", "frog",
                           "horse", "ship", "truck"]) + "\n")
    trained = _cli(train, tmp_path, model="trivial", batch_size=4, num_epochs=1)
    assert "total images/sec:" in trained
    scored = _cli(evaluate, tmp_path)
    assert "test_batch.bin (12 examples" in scored, scored
    _cli(export, tmp_path)
    output = [w.split("=", 1)[1] for w in export if w.startswith("--output=")][0]
    assert os.path.getsize(tmp_path / output) > 0
