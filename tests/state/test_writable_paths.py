"""Every path a run writes is checked before the first step, and a failed
check leaves nothing behind. An unwritable path that fails for any
user, root included: one below a regular file."""
import os

import numpy as np
import pytest

from towertrain import Params, Trainer
from towertrain.errors import ParamsError
from towertrain.input_pipeline import from_arrays
from towertrain.state import writable

import helpers.cli


@pytest.fixture
def blocked(tmp_path):
    """A regular file: nothing can be written below it."""
    path = tmp_path / "a_file"
    path.write_text("x")
    return str(path)


def _listing(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, dirs, files in os.walk(root) for f in files + dirs)


def test_an_unwritable_summary_dir_stops_the_cli_before_any_step(tmp_path, blocked):
    before = _listing(tmp_path)
    done = helpers.cli.run_cli("--model=trivial", "--device=cpu", "--num_batches=2",
                               "--num_warmup_batches=0", f"--train_dir={tmp_path}/run",
                               f"--summary_dir={blocked}/events", "--summary_verbosity=1",
                               "--save_summaries_steps=1")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"towertrain: error: --summary_dir={blocked}/events: "
                                  f"{blocked} is a file, not a directory"), done.stderr
    assert "images/sec" not in done.stdout
    assert _listing(tmp_path) == before  # no train_dir, no checkpoint, no event file


def test_the_library_checks_every_path_before_training(tmp_path, blocked):
    rng = np.random.default_rng(0)
    data = from_arrays(rng.standard_normal((8, 32, 32, 3)).astype(np.float32),
                       rng.integers(0, 10, 8).astype(np.int32), 4)
    trainer = Trainer(Params(model="trivial", device="cpu", num_batches=1,
                             num_warmup_batches=0, train_dir=str(tmp_path / "run"),
                             trace_file=f"{blocked}/trace.json"), input_source=data)
    with pytest.raises(ParamsError, match=r"--trace_file=.*is a file, not a directory"):
        trainer.train(write=helpers.cli.quiet)
    assert trainer.global_step() == 0
    assert _listing(tmp_path) == ["a_file"]
    trainer.close()


def test_export_checks_its_output_before_the_work(tmp_path, blocked):
    done = helpers.cli.run_cli(f"--train_dir={tmp_path}", f"--output={blocked}/model.keras",
                               module="towertrain.export")
    assert done.returncode == 2, done.stderr
    assert (f"--output={blocked}/model.keras: {blocked} is a file, not a directory"
            in done.stderr), done.stderr


@pytest.mark.parametrize("is_file", [False, True])
def test_writable_paths_pass_and_create_nothing(tmp_path, is_file):
    target = tmp_path / "new" / ("out.json" if is_file else "dir")
    assert writable.problem(str(target), is_file) is None
    assert os.listdir(tmp_path) == []
