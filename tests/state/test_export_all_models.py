"""Every registered model exports to a .keras file that loads without towertrain.

Each model is built small, its variables perturbed (so a batch norm whose
statistics were mapped wrongly would show), checkpointed with a run record as
training writes them, exported through towertrain.state.export, then loaded in ONE
fresh process where towertrain cannot be imported; logits must match the
towertrain model's.

The default suite exports every model except the copies in
helpers.model_checkpoints.REPRESENTED_BY (resnet32..110 and _v2,
resnet50_v1.5/101/152, vgg16/19): their export path is their representative's
(resnet20(_v2), resnet50, vgg11: the same layer classes and configs, only more
of them, or one stride moved), which runs here, and tests/models/test_models.py
pins their structure by parameter counts. FAST holds the cheap ones (trivial,
lenet and one model per CIFAR builder); the ImageNet builders (resnet50,
inception3, googlenet, alexnet, vgg11: up to 58M parameters even at their
smallest size) run in a test marked slow; TOWERTRAIN_FULL_SWEEP=1 runs the
copies too.
"""
import json
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import tensorflow as tf

from towertrain import models
from towertrain.state import checkpoint as ckpt_lib
from towertrain.state import export

from helpers.model_checkpoints import (NUM_CLASSES, REPRESENTED_BY, full_sweep_only,
                                       write_checkpoint)

# Keras' own .keras writer trips NumPy 2's __array__(copy=) deprecation per weight.
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")
# towertrain is pip-installed (editable) in this environment, so `python -I`
# alone would still find it: a finder that refuses it stands in for a machine
# without towertrain. Per-model failures are collected so one run names them all.
LOAD_ALL = r"""
import importlib.abc, json, sys, traceback

class _NoTowertrain(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "towertrain":
            raise ModuleNotFoundError(f"No module named {name!r} (refused by the test)")
        return None

sys.meta_path.insert(0, _NoTowertrain())
import numpy as np, keras
errors = {}
for case in json.load(open(sys.argv[1])):
    try:
        model = keras.saving.load_model(case["keras"])
        np.save(case["got"], np.asarray(model(np.load(case["images"]), training=False)))
    except Exception:
        errors[case["keras"]] = traceback.format_exc(limit=3)
    model = None
leaked = sorted(m for m in sys.modules if m.split(".")[0] == "towertrain")
json.dump({"errors": errors, "towertrain_modules": leaked}, open(sys.argv[2], "w"))
"""


# Every builder's code path at its cheapest; the rest are deeper or wider copies.
FAST = ["trivial", "cifar_cnn", "alexnet_cifar", "densenet40_k12", "resnet20",
        "resnet20_v2", "lenet"]


def _slow_names():
    return [name for name in models.registered_names() if name not in FAST]






def _export_and_load_all(names, tmp_path):
    rng = np.random.RandomState(0)
    cases, expected = [], {}
    for name in names:
        train_dir = str(tmp_path / name)
        images, logits = write_checkpoint(name, train_dir, rng)
        formats = ["NHWC", "NCHW"] if name == "alexnet_cifar" else ["NHWC"]  # LRN's 2 paths
        for data_format in formats:
            keras_file = os.path.join(train_dir, f"{data_format}.keras")
            export.export(train_dir=train_dir, output=keras_file, data_format=data_format)
            with zipfile.ZipFile(keras_file) as archive:
                config = archive.read("config.json").decode()
            assert "towertrain" not in config, f"{name}: config names towertrain"
            case_images = os.path.join(train_dir, f"{data_format}_images.npy")
            np.save(case_images,
                    images if data_format == "NHWC" else images.transpose(0, 3, 1, 2))
            cases.append({"keras": keras_file, "images": case_images,
                          "got": os.path.join(train_dir, f"{data_format}_logits.npy")})
            expected[keras_file] = (f"{name} {data_format}", logits)

    (tmp_path / "cases.json").write_text(json.dumps(cases))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["TF_ENABLE_ONEDNN_OPTS"] = "1"  # NCHW convs on CPU (as towertrain sets it)
    done = subprocess.run(  # -I: no cwd, no PYTHONPATH, no user site
        [sys.executable, "-I", "-c", LOAD_ALL, str(tmp_path / "cases.json"),
         str(tmp_path / "result.json")],
        capture_output=True, text=True, timeout=600, cwd=str(tmp_path), env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["towertrain_modules"] == []
    failed = {expected[path][0]: error for path, error in result["errors"].items()}
    assert not failed, "\n".join(f"{label}: {error}" for label, error in failed.items())
    for case in cases:
        label, want = expected[case["keras"]]
        np.testing.assert_allclose(np.load(case["got"]), want, rtol=1e-4, atol=1e-4,
                                   err_msg=label)
    for name in names:  # up to 1 GB of checkpoints and .keras files: not kept on success
        shutil.rmtree(tmp_path / name)


def test_cheap_models_export_and_load_without_towertrain(tmp_path):
    _export_and_load_all(FAST, tmp_path)


def _slow_groups():
    """The remaining models: the ImageNet builders (plus any model registered
    outside FAST and REPRESENTED_BY) by default, and the copies in two groups
    of similar cost for the full sweep, so a parallel run (pytest -n 2) can
    spread them."""
    names = _slow_names()
    copies = [n for n in names if n in REPRESENTED_BY]
    cifar_copies = [n for n in copies if models.get_spec(n).default_dataset == "cifar10"]
    return {"imagenet": [n for n in names if n not in REPRESENTED_BY],
            "cifar_copies": cifar_copies,
            "imagenet_copies": [n for n in copies if n not in cifar_copies]}


def _group_param(group):
    if group == "imagenet":
        return group
    return pytest.param(group, marks=full_sweep_only(
        "repeats builders the default suite exports (helpers.model_checkpoints.REPRESENTED_BY)"))


@pytest.mark.slow
@pytest.mark.parametrize("group", [_group_param(g) for g in sorted(_slow_groups())])
def test_remaining_models_export_and_load_without_towertrain(tmp_path, group):
    _export_and_load_all(_slow_groups()[group], tmp_path)


def test_every_model_is_covered():
    """Every registered model is exported by default or is a copy whose
    representative is; the full sweep adds the copies."""
    registered = models.registered_names()
    groups = _slow_groups()
    default = FAST + groups["imagenet"]
    full = groups["cifar_copies"] + groups["imagenet_copies"]
    assert set(FAST) <= set(registered)
    assert sorted(default + full) == registered  # each exactly once
    assert set(full) == set(REPRESENTED_BY) & set(registered)
    assert all(REPRESENTED_BY[name] in default for name in full)
