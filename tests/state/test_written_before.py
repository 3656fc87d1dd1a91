"""A train_dir written by towertrain before its settings and resume code moved
(tests/state/written_before/: checkpoints and run record of a 2-epoch run with
batch norm, dropout and --distortions) resumes under today's code, and the
extended run ends where today's uninterrupted run does."""
import re
import shutil
import subprocess

import numpy as np
import pytest

from helpers import cifar_files
from helpers import written_before
from helpers.checkpoint_files import latest_step, saved_tensors

FOLDER = __file__.rsplit("/", 1)[0] + "/written_before"


@pytest.mark.slow
def test_a_train_dir_written_before_resumes_exactly(tmp_path):
    # The data the folder was trained on: the helper writes the same bytes.
    data_dir = cifar_files.write_dataset(str(tmp_path / "data"), 72, 10, train_files=2)
    old = str(tmp_path / "old")
    shutil.copytree(FOLDER, old)
    assert latest_step(old) == 10
    resumed = subprocess.run(written_before.command(data_dir, old, "--num_epochs=4"),
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert re.search(r"Resumed:\s+from step 10 ", resumed.stdout), resumed.stdout
    assert latest_step(old) == 20

    straight = str(tmp_path / "straight")
    subprocess.run(written_before.command(data_dir, straight, "--num_epochs=4"),
                   check=True, capture_output=True, timeout=300)
    expected, got = saved_tensors(straight), saved_tensors(old)
    assert sorted(got) == sorted(expected)
    # Dropout and batch norm have variables of their own: both kinds are compared.
    assert any("bn" in name for name in got) and any("dropout" in name for name in got), (
        sorted(got))
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], atol=1e-6, rtol=0, err_msg=name)
