"""A setting is handled in few product files: declared once, beside its
reader (towertrain.config.declare), and read where it is used.

Counted as code: the files of towertrain/, models/ and input_pipeline/ where
the setting's name is a name, an attribute, a keyword or argument, a
definition's name, an imported name, or a string literal that is exactly the
name (a key); never a comment, a docstring or a message (`--name=...`).

    python -m pytest tests/config/test_setting_homes.py -s    # prints the table
"""
import ast
import os
import statistics

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRODUCT = ("towertrain", "models", "input_pipeline")

# The counts on the commit before settings moved beside their readers.
BEFORE = {"gradient_clip": 5, "num_intra_threads": 8, "all_reduce_spec": 12,
          "batch_size": 21, "optimizer": 17, "momentum": 10, "use_fp16": 10,
          "train_dir": 24, "save_model_steps": 5, "display_every": 9, "data_dir": 17,
          "num_gpus": 9, "variable_update": 16, "summary_verbosity": 10}
COMMON = tuple(BEFORE)
# A declared setting may not spread again: at most the files it has now (a
# ceiling that only comes down). The others (batch_size, train_dir, data_dir,
# optimizer, variable_update) have no ceiling while their moves are pending.
CEILING = {"gradient_clip": 3, "num_intra_threads": 3, "all_reduce_spec": 3,
           "momentum": 6, "use_fp16": 1, "save_model_steps": 3, "display_every": 2,
           "num_gpus": 3, "summary_verbosity": 2}


def code_tokens(tree):
    """The words of a module that are code, not prose."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.arg
        elif isinstance(node, ast.arg):
            yield node.arg
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, ast.alias):
            yield node.asname or node.name.split(".")[-1]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value  # a message is never exactly one setting's name


def files_by_token(root=ROOT):
    """{relative path: its code tokens} of every product file."""
    found = {}
    for folder in PRODUCT:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding="utf-8") as f:
                        tree = ast.parse(f.read(), path)
                    found[os.path.relpath(path, root)] = set(code_tokens(tree))
    return found


def homes(names, root=ROOT):
    """{setting: sorted files where it is code}."""
    files = files_by_token(root)
    return {name: sorted(p for p, tokens in files.items() if name in tokens) for name in names}


@pytest.fixture(scope="module")
def counted():
    found = homes(COMMON)
    print("\nsetting                 before  now  files")
    for name in COMMON:
        print(f"{name:24}{BEFORE[name]:6}{len(found[name]):5}  {', '.join(found[name])}")
    print(f"{'median':24}{statistics.median(BEFORE.values()):6}"
          f"{statistics.median(len(found[n]) for n in COMMON):5}")
    return found


@pytest.mark.parametrize("name", ["gradient_clip", "num_intra_threads"])
def test_a_setting_is_handled_in_at_most_3_files(counted, name):
    assert len(counted[name]) <= 3, counted[name]


@pytest.mark.parametrize("name", sorted(CEILING))
def test_no_setting_spreads_again(counted, name):
    assert len(counted[name]) <= CEILING[name], counted[name]


def test_the_median_over_the_common_settings_is_at_most_3(counted):
    # batch_size, train_dir, variable_update, optimizer and data_dir are still
    # read by many modules under those names (the word is also a Keras
    # optimizer's, an input reader's argument); the others ask their section.
    assert statistics.median(len(counted[n]) for n in COMMON) <= 3


def test_the_count_sees_code_and_not_prose(tmp_path):
    module = tmp_path / "towertrain" / "m.py"
    module.parent.mkdir()
    module.write_text('"""gradient_clip in a docstring."""\n'
                      '# gradient_clip in a comment\n'
                      'MESSAGE = "--gradient_clip=1: must be > 0"\n'
                      'def f(clipping):\n    return clipping.global_norm_clip\n'
                      'KEY = "momentum"\n')
    found = homes(("gradient_clip", "global_norm_clip", "momentum"), root=str(tmp_path))
    assert found == {"gradient_clip": [], "global_norm_clip": ["towertrain/m.py"],
                     "momentum": ["towertrain/m.py"]}
