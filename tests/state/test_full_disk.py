"""A full disk fails safe, on small tmpfs mounts: a save
that fails is one line with a non-zero exit, the previous checkpoint is kept
byte for byte, nothing of the failed save is left, and a plain resume from
the kept checkpoint equals an uninterrupted run; a disk that cannot hold one
checkpoint is refused before the first step. Without the right to mount
(not root), the first-save case injects the write failure instead."""
import os
import shutil
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.callbacks import Callback
from towertrain.state.checkpoint import CheckpointError

import helpers.cli
from helpers.checkpoint_files import files_of, saved_tensors
from helpers.cli import run_cases

COMMON = ["--model=trivial", "--device=cpu", "--batch_size=2", "--num_warmup_batches=0",
          "--display_every=100", "--optimizer=momentum", "--num_batches=4",
          "--save_model_steps=2"]
PAGE = 4096


def _pages(num_bytes):
    return -(-num_bytes // PAGE) * PAGE


class Tmpfs:
    """Small tmpfs mounts, unmounted at teardown."""

    def __init__(self, root):
        self.root, self.mounted = root, []

    def mount(self, name, size):
        path = os.path.join(self.root, name)
        os.makedirs(path)
        try:
            done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                                   path], capture_output=True, text=True)
        except OSError:  # no mount command
            return None
        if done.returncode:
            return None
        self.mounted.append(path)
        return path

    def unmount_all(self):
        for path in reversed(self.mounted):
            subprocess.run(["umount", path], check=False)
        self.mounted = []


@pytest.fixture
def tmpfs(tmp_path):
    mounts = Tmpfs(str(tmp_path))
    yield mounts
    mounts.unmount_all()






@pytest.mark.slow
def test_a_full_disk_mid_run_keeps_the_last_checkpoint_and_resumes_exactly(tmp_path, tmpfs):
    reference = str(tmp_path / "reference")
    [(code, _, err)] = run_cases("train", [[*COMMON, f"--train_dir={reference}"]],
                                 tmp_path / "reference.json")
    assert code == 0, err
    # Room for the run record, the state file and one checkpoint, and half
    # another: the check before the first step passes, the save at step 2
    # fits, the one at step 4 does not.
    data, index = (os.path.getsize(os.path.join(reference, f"ckpt-2.{suffix}"))
                   for suffix in ("data-00000-of-00001", "index"))
    size = _pages(data) + _pages(index) + 3 * PAGE + _pages(data // 2)
    full, tiny = tmpfs.mount("full", size), tmpfs.mount("tiny", "8k")
    if full is None:
        pytest.skip("cannot mount a tmpfs here (not root); the library test injects the failure")
    run = os.path.join(full, "run")
    (code, out, err), (tiny_code, tiny_out, tiny_err) = run_cases("train", [
        [*COMMON, f"--train_dir={run}"],
        [*COMMON, f"--train_dir={tiny}/run"]], tmp_path / "full.json")

    assert code == 2, out + err
    lines = err.splitlines()
    assert lines == [f"towertrain: error: saving the checkpoint of step 4 in --train_dir={run} "
                     f"failed (No space left on device); the previous checkpoint {run}/ckpt-2 "
                     "is kept and a resume starts there; free space (or fix the path) and run "
                     "the same command again"], err
    assert tf.train.latest_checkpoint(run) == f"{run}/ckpt-2"
    assert files_of(run, "ckpt-2.") == files_of(reference, "ckpt-2.")  # intact, byte for byte
    assert sorted(n for n in os.listdir(run) if "ckpt-4" in n) == []  # no _temp, no part

    # Refused before the first step: the numbers, nothing trained.
    assert (tiny_code, tiny_out) == (2, ""), tiny_out
    assert tiny_err.startswith(f"towertrain: error: --train_dir={tiny}/run: ") and (
        "free on its disk, but a checkpoint of this run needs about" in tiny_err and
        "(checked before training, nothing was trained)\n" in tiny_err), tiny_err
    assert os.listdir(f"{tiny}/run") == []

    # The plain resume, on a disk with room, equals the uninterrupted run.
    resumed = str(tmp_path / "resumed")
    shutil.copytree(run, resumed)
    tmpfs.unmount_all()
    [(code, out, err)] = run_cases("train", [[*COMMON, f"--train_dir={resumed}"]],
                                   tmp_path / "resumed.json")
    assert code == 0 and "Resumed:     from step 2" in out, out + err
    got, want = saved_tensors(f"{resumed}/ckpt-4"), saved_tensors(f"{reference}/ckpt-4")
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-6, err_msg=name)


class FillDisk(Callback):
    """Fills the train_dir's disk after the first step (another program's file)."""

    def __init__(self, path):
        self.path = path

    def after_step(self, step, result, seconds):
        if step == 1:
            try:
                with open(self.path, "wb", buffering=0) as f:
                    while True:
                        f.write(b"\0" * PAGE)
            except OSError:  # full
                pass


def test_a_full_disk_at_the_first_save_is_one_error_and_leaves_no_temporary_files(
        tmp_path, tmpfs, monkeypatch):
    disk = tmpfs.mount("disk", "64k")
    train_dir = os.path.join(disk or str(tmp_path), "run")
    callbacks = [FillDisk(os.path.join(disk, "filler"))] if disk else []
    if disk is None:  # no mount: the write fails as a full disk's would
        def no_space(self, *args, **kwargs):
            os.makedirs(os.path.join(train_dir, "ckpt-3_temp"))
            raise tf.errors.ResourceExhaustedError(None, None, "No space left on device")
        monkeypatch.setattr(tf.train.CheckpointManager, "save", no_space)
    trainer = Trainer(Params(model="trivial", device="cpu", batch_size=2, num_batches=3,
                             num_warmup_batches=0, display_every=100, train_dir=train_dir))
    try:
        with pytest.raises(CheckpointError) as raised:
            trainer.train(write=helpers.cli.quiet, callbacks=callbacks)
    finally:
        trainer.close()
    message = str(raised.value)
    assert message == (f"saving the checkpoint of step 3 in --train_dir={train_dir} failed "
                       "(No space left on device); no earlier checkpoint exists; free space "
                       "(or fix the path) and run the same command again")
    # Only the run record: no checkpoint, no `ckpt-3_temp/`, no state file.
    assert sorted(os.listdir(train_dir)) == [".towertrain.lock", "towertrain_run.json"]
