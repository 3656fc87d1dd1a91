"""What an earlier run or a user left in a train_dir is handled, nothing lost:
a `checkpoint` state file gone while the ckpt-N files remain (deleted, or the
files copied to a new folder without it) resumes from the latest ckpt-N,
says so, and saves on after it (it started over at step 1 and wrote over
them); the ckpt-N_temp/ folders of saves a killed run never finished are
removed."""
import os
import re

import numpy as np

from towertrain import Params, Trainer
from towertrain.state import checkpoint as ckpt_lib

from helpers.checkpoint_files import committed_steps, saved_tensors


def _train(train_dir, steps):
    lines = []
    trainer = Trainer(Params(model="trivial", device="cpu", num_gpus=1, batch_size=2,
                             num_batches=steps, num_warmup_batches=0, display_every=100,
                             save_model_steps=2, train_dir=train_dir))
    try:
        trainer.train(write=lines.append)
    finally:
        trainer.close()
    return lines


def test_a_lost_state_file_is_rewritten_and_the_run_resumes_from_its_latest_file(tmp_path):
    train_dir, reference = str(tmp_path / "run"), str(tmp_path / "reference")
    _train(train_dir, 4)
    os.remove(os.path.join(train_dir, ckpt_lib.STATE_FILE))
    lines = _train(train_dir, 6)
    assert any(re.match(r"Resumed:\s+from step 4 ", line) for line in lines), lines
    assert any(re.match(r"Recovered:\s+the train_dir's `checkpoint` state file was missing; "
                        r"rewritten from its files \(ckpt-2, ckpt-4\), so the run resumes "
                        r"from ckpt-4 instead of starting over$", line) for line in lines), lines
    assert committed_steps(train_dir) == [2, 4, 6]
    _train(reference, 6)  # uninterrupted: the resumed run is the same run
    got, expected = saved_tensors(train_dir), saved_tensors(reference)
    assert sorted(got) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)


def test_the_folders_of_saves_a_killed_run_never_finished_are_removed_at_the_next_start(
        tmp_path):
    """kill -9 during a save leaves TensorFlow's ckpt-N_temp/ (18 MB for
    alexnet); they were never removed."""
    train_dir = str(tmp_path / "run")
    _train(train_dir, 2)
    os.makedirs(os.path.join(train_dir, "ckpt-4_temp"))
    with open(os.path.join(train_dir, "ckpt-4_temp", "part-00000-of-00001.data-00000-of-00001"),
              "wb") as f:
        f.write(b"\0" * 1000)
    lines = _train(train_dir, 4)
    assert "Removed:     ckpt-4_temp/: unfinished saves of a run that was killed (the " \
           "checkpoints are whole)" in lines, lines
    assert any(re.match(r"Resumed:\s+from step 2 ", line) for line in lines), lines
    assert sorted(os.listdir(train_dir)) == [
        ".towertrain.lock", "checkpoint", "ckpt-2.data-00000-of-00001", "ckpt-2.index",
        "ckpt-4.data-00000-of-00001", "ckpt-4.index", "towertrain_run.json"]
