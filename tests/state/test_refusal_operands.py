"""Every `and`/`or` operand of a refusal's condition (of the run's steps, the
run record, the written paths, export and the cluster's checks) has a row
where it alone decides: two calls that differ only in what that operand reads, one refused
(or, for the paths a run checks, one path checked) and one not. The operands
are found by walking the refusal functions' syntax trees, so an operand added
to a condition without a row here fails test_every_operand_has_a_row, and a
check that drops an operand fails that operand's row (the other operands of
its condition never decide it)."""
import ast
import json
import os
import types

import pytest

from towertrain import Params
from towertrain.config.cluster_spec import Cluster
from towertrain.errors import CheckpointError, ClusterError, ParamsError
from towertrain.plan import InputFacts, cluster, steps
from towertrain.plan.sections import Outputs
from towertrain.state import export, run_record, writable
from towertrain.state.resume import contract
from towertrain.state.run_record import RUN_INFO_FILE

from helpers.doc_blocks import ROOT


def _refused(call):
    try:
        call()
    except (ParamsError, CheckpointError, ClusterError):
        return True
    return False


# --- each refusal's outcome of one call -------------------------------------

def _fits(eval_=False, user_epochs=False, steps_per_epoch=1, examples=10, global_batch=16):
    params = types.SimpleNamespace(eval=eval_, num_epochs=1, num_examples_per_epoch=None,
                                   data_dir="/d")
    facts = InputFacts(steps_per_epoch=steps_per_epoch, num_examples=examples,
                       user_epochs=user_epochs)
    return _refused(lambda: steps.check_batch_fits_epoch(params, facts, global_batch,
                                                         (global_batch // 2, 2, 1)))


def _epoch(input_steps=2, given=40):
    return _refused(lambda: steps.epoch_batches(given, input_steps, 10))


def _settings(record, current):
    return _refused(lambda: contract.check_state_settings(record, current, "D"))


def _input(record, current):
    return _refused(lambda: contract.check_training_input(record, current, "/d", "D"))


def _eval_input(record, data_dir):
    return _refused(lambda: run_record.check_eval_input(record, data_dir, "D"))


def _check(record, given):
    return _refused(lambda: run_record.check(record, given, "D"))


def _raised(call, start):
    """Whether `call` raises an error whose message starts with `start`."""
    try:
        call()
    except Exception as err:  # noqa: BLE001 - any other outcome is "not this refusal"
        return str(err).startswith(start)
    return False


def _export(tmp, output=None, saved_model=None, model_name=None, recorded=None,
            start="nothing to write"):
    """export() on a train_dir holding an (unreadable) ckpt-1 and a run record
    naming `recorded`; whether the refusal starting with `start` fired."""
    train_dir = os.path.join(tmp, "run")
    os.makedirs(train_dir, exist_ok=True)
    for name, text in (("checkpoint", 'model_checkpoint_path: "ckpt-1"\n'),
                       ("ckpt-1.index", ""),
                       (RUN_INFO_FILE, json.dumps({"model": recorded} if recorded else {}))):
        with open(os.path.join(train_dir, name), "w") as f:
            f.write(text)
    at = (lambda name: name and os.path.join(tmp, name))
    return _raised(lambda: export.export(train_dir=train_dir, output=at(output),
                                         saved_model=at(saved_model), model_name=model_name),
                   start)


def _chief(task_type="chief", index=1):
    text = json.dumps({"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2",
                                                                       "127.0.0.1:3"]},
                       "task": {"type": task_type, "index": index}})
    return _raised(lambda: cluster.from_tf_config(text), "TF_CONFIG: chief task index")


def _paths(training=True, **outputs):
    return [flag for flag, _, _ in writable.run_paths(Outputs(**outputs), training)]


def _problem(tmp, kind, is_file):
    path = os.path.join(tmp, kind)
    if kind == "dir":
        os.makedirs(path, exist_ok=True)
    elif kind == "file":
        with open(path, "w") as f:
            f.write("x")
    return writable.problem(path, is_file)


# --- the rows: {(module, function): {operand: (decided, flipped)}} ------------
# Each pair: the outcome with the operand as in a refusal (or a checked path),
# then with that operand alone flipped. `tmp` is a fresh directory.
INPUT = {"input_examples": 40, "input_files": ["a.bin"]}
ROWS = {
    ("towertrain/plan/steps.py", "check_batch_fits_epoch"): {
        "params.eval": lambda tmp: (_fits(), _fits(eval_=True)),
        "input_facts.user_epochs": lambda tmp: (_fits(), _fits(user_epochs=True)),
        "input_facts.steps_per_epoch is None": lambda tmp: (_fits(),
                                                            _fits(steps_per_epoch=None)),
        "not examples": lambda tmp: (_fits(), _fits(examples=0)),
        "examples >= global_batch": lambda tmp: (_fits(), _fits(examples=16)),
    },
    ("towertrain/plan/steps.py", "epoch_batches"): {
        "input_steps_per_epoch is not None": lambda tmp: (_epoch(), _epoch(input_steps=None)),
        "input_steps_per_epoch != batches": lambda tmp: (_epoch(), _epoch(input_steps=4)),
    },
    ("towertrain/state/resume/contract.py", "check_state_settings"): {
        "name not in record": lambda tmp: (_settings({"momentum": 0.9}, {"momentum": 0.5}),
                                           _settings({}, {"momentum": 0.5})),
        "name not in current": lambda tmp: (_settings({"momentum": 0.9}, {"momentum": 0.5}),
                                            _settings({"momentum": 0.9}, {})),
        "record[name] == current[name]": lambda tmp: (
            _settings({"momentum": 0.9}, {"momentum": 0.5}),
            _settings({"momentum": 0.9}, {"momentum": 0.9})),
    },
    ("towertrain/state/resume/contract.py", "check_training_input"): {
        "'input_files' not in record": lambda tmp: (
            _input(INPUT, dict(INPUT, input_examples=30)),
            _input({"input_examples": 40}, dict(INPUT, input_examples=30))),
        "not current": lambda tmp: (_input(INPUT, dict(INPUT, input_examples=30)),
                                    _input(INPUT, {})),
    },
    ("towertrain/state/run_record.py", "check_eval_input"): {
        "trained_on": lambda tmp: (_eval_input({"data_dir": "/d"}, None),
                                   _eval_input({"data_dir": None}, None)),
        "not data_dir": lambda tmp: (_eval_input({"data_dir": "/d"}, None),
                                     _eval_input({"data_dir": "/d"}, "/e")),
    },
    ("towertrain/state/run_record.py", "check"): {
        "recorded is None": lambda tmp: (_check({"model": "a"}, {"model": "b"}),
                                         _check({}, {"model": "b"})),
        "name not in given": lambda tmp: (_check({"model": "a"}, {"model": "b"}),
                                          _check({"model": "a"}, {})),
        "value == recorded": lambda tmp: (_check({"model": "a"}, {"model": "b"}),
                                          _check({"model": "a"}, {"model": "a"})),
    },
    ("towertrain/state/writable.py", "run_paths"): {
        # outputs.train_dir and training
        "outputs.train_dir": lambda tmp: (_paths(train_dir="/t"), _paths()),
        "training": lambda tmp: (_paths(train_dir="/t", trace_file="/f"),
                                 _paths(False, train_dir="/t", trace_file="/f")),
        # outputs.summary_dir and outputs.writes_logdir (summaries or a profile:
        # test_summaries_or_a_profile_alone_has_the_summary_dir_checked)
        "outputs.summary_dir": lambda tmp: (_paths(summary_dir="/s", summary_verbosity=1),
                                            _paths(summary_verbosity=1)),
        "outputs.writes_logdir": lambda tmp: (
            _paths(summary_dir="/s", summary_verbosity=1), _paths(summary_dir="/s")),
        # outputs.trace_file and training
        "outputs.trace_file": lambda tmp: (_paths(trace_file="/f"), _paths()),
    },
    ("towertrain/state/export.py", "export"): {
        # not output and not saved_model
        "not output": lambda tmp: (_export(tmp), _export(tmp, output="m.keras")),
        "not saved_model": lambda tmp: (_export(tmp), _export(tmp, saved_model="saved")),
        # output and not output.endswith('.keras')
        "output": lambda tmp: (_export(tmp, "m.h5", start="--output="),
                               _export(tmp, None, "saved", start="--output=")),
        "not output.endswith('.keras')": lambda tmp: (
            _export(tmp, "m.h5", start="--output="), _export(tmp, "m.keras", start="--output=")),
        # model_name and info.get('model') and model_name != info['model']
        "model_name": lambda tmp: (
            _export(tmp, "m.keras", None, "lenet", "trivial", start="--model="),
            _export(tmp, "m.keras", None, None, "trivial", start="--model=")),
        "info.get('model')": lambda tmp: (
            _export(tmp, "m.keras", None, "lenet", "trivial", start="--model="),
            _export(tmp, "m.keras", None, "lenet", None, start="--model=")),
        "model_name != info['model']": lambda tmp: (
            _export(tmp, "m.keras", None, "lenet", "trivial", start="--model="),
            _export(tmp, "m.keras", None, "trivial", "trivial", start="--model=")),
    },
    ("towertrain/plan/cluster.py", "from_tf_config"): {
        "task_type == CHIEF": lambda tmp: (_chief(), _chief(task_type="worker")),
        "task_id": lambda tmp: (_chief(), _chief(index=0)),
    },
    ("towertrain/state/writable.py", "problem"): {
        # is_file and os.path.isdir(path): a file wanted where a directory is
        "is_file": lambda tmp: (_problem(tmp, "dir", True), _problem(tmp, "dir", False)),
        "os.path.isdir(path)": lambda tmp: (_problem(tmp, "dir", True),
                                            _problem(tmp, "file", True)),
        # not is_file and not os.path.isdir(path): a directory wanted where a file is
        "not is_file": lambda tmp: (_problem(tmp, "file", False), _problem(tmp, "file", True)),
        "not os.path.isdir(path)": lambda tmp: (_problem(tmp, "file", False),
                                                _problem(tmp, "dir", False)),
    },
}


def _operands(path, function):
    """The `and`/`or` operands in the conditions of `function` in `path`."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for inner in ast.walk(node):
                tests = ([inner.test] if isinstance(inner, (ast.If, ast.IfExp, ast.While))
                         else inner.ifs if isinstance(inner, ast.comprehension) else [])
                for test in tests:
                    for boolean in ast.walk(test):
                        if isinstance(boolean, ast.BoolOp):
                            found.extend(ast.unparse(value) for value in boolean.values)
    return found


def _refusal_functions(path):
    """Functions of `path` with an `and`/`or` in a condition and a refusal
    (a raise) or, in writable.py, the list of paths checked."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and _operands(path, node.name) and (
                any(isinstance(inner, ast.Raise) for inner in ast.walk(node))
                or path.endswith("writable.py")):
            names.add(node.name)
    return names


def test_every_operand_has_a_row():
    for path in sorted({path for path, _ in ROWS}):
        assert _refusal_functions(path) == {f for p, f in ROWS if p == path}, path
    for (path, function), rows in ROWS.items():
        assert sorted(set(_operands(path, function))) == sorted(rows), (path, function)


@pytest.mark.parametrize("writes", [dict(summary_verbosity=1), dict(profile_steps="2,3")])
def test_summaries_or_a_profile_alone_has_the_summary_dir_checked(writes):
    assert _paths(summary_dir="/s", **writes) == ["summary_dir"]
    assert _paths(summary_dir="/s") == []


@pytest.mark.parametrize("where,operand", [(where, operand) for where, rows in ROWS.items()
                                           for operand in rows],
                         ids=[f"{function}: {operand}" for (_, function), rows in ROWS.items()
                              for operand in rows])
def test_each_operand_alone_decides(tmp_path, where, operand):
    decided, flipped = ROWS[where][operand](str(tmp_path))
    assert decided and not flipped, (decided, flipped)
