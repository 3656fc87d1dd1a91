"""State files another process wrote are read right when an earlier, different
writer left them behind: the train_dir lock (its holder's pid), the run
record (an earlier run's settings and final mark) and the checkpoint state
file (naming checkpoint files deleted since; one a set-aside rewrote, read
from a copied train_dir: callbacks/test_divergence.py)."""
import json
import os

from towertrain import Params, Trainer
from towertrain.callbacks import Callback
from towertrain.state import run_record
from towertrain.state.resume import train_dir_lock
from towertrain.state.run_record import RUN_INFO_FILE

import helpers.cli
from helpers import refusals

COMMON = ["--model=trivial", "--device=cpu", "--batch_size=2", "--num_warmup_batches=0",
          "--display_every=100", "--optimizer=momentum"]


def test_the_lock_names_its_holder_not_a_longer_pid_an_earlier_holder_left(
        tmp_path, capsys):
    # An earlier run (its pid longer than this one's) held the lock and ended:
    # the kernel freed the lock, the file keeps its pid.
    earlier = "9" * (len(str(os.getpid())) + 4)
    (tmp_path / train_dir_lock.LOCK_FILE).write_text(earlier)
    held = train_dir_lock.acquire(str(tmp_path))
    try:
        status, err = refusals.run_cli([*COMMON, "--num_batches=1",
                                        f"--train_dir={tmp_path}"], capsys)
    finally:
        held.release()
    assert status == 2
    assert err == (f"towertrain: error: --train_dir={tmp_path} is in use by another training "
                   f"run (process {os.getpid()}); wait for it to end, stop it, or use "
                   "another --train_dir\n")


class RecordAtStart(Callback):
    """The run record as the train_dir holds it when the first step starts."""

    def __init__(self, train_dir):
        self.train_dir, self.record = train_dir, None

    def before_train(self, loop):
        super().before_train(loop)
        self.record = run_record.read(self.train_dir)


def _train(train_dir, **kw):
    trainer = Trainer(Params(model="trivial", device="cpu", batch_size=2, num_warmup_batches=0,
                             display_every=100, optimizer="momentum", train_dir=train_dir, **kw))
    seen = RecordAtStart(train_dir)
    try:
        trainer.train(write=helpers.cli.quiet, callbacks=[seen])
    finally:
        trainer.close()
    return seen.record


def test_a_record_an_earlier_run_left_without_checkpoints_is_replaced_not_obeyed(tmp_path):
    """An adam run's record whose checkpoints are gone: nothing to resume, so
    its settings refuse nothing, and the new run's record replaces it whole."""
    with open(os.path.join(tmp_path, RUN_INFO_FILE), "w") as f:
        json.dump({"model": "trivial", "data_name": "cifar10", "optimizer": "adam",
                   "adam_beta1": 0.5, "final_step": 7, "final_checkpoint": "ckpt-7",
                   "written_by": "an earlier version"}, f)
    record = _train(str(tmp_path), num_batches=1)
    assert record["optimizer"] == "momentum"
    assert not {"adam_beta1", "final_step", "final_checkpoint", "written_by"} & set(record)


def test_a_resume_drops_the_final_mark_of_the_run_it_extends_before_its_first_step(tmp_path):
    """An evaluator following the train_dir stops at the final mark: a resumed
    run that kept its predecessor's would end the evaluator at the old step."""
    _train(str(tmp_path), num_batches=1)
    finished = run_record.read(str(tmp_path))
    assert (finished["final_step"], finished["final_checkpoint"]) == (1, "ckpt-1")
    record = _train(str(tmp_path), num_batches=2)
    assert "final_step" not in record and "final_checkpoint" not in record
    assert run_record.read(str(tmp_path))["final_step"] == 2


def test_a_state_file_naming_deleted_checkpoints_is_one_line_with_both_ways_out(
        tmp_path, capsys):
    """An earlier run's `checkpoint` file, its ckpt-5 files deleted since."""
    state = tmp_path / "checkpoint"
    state.write_text('model_checkpoint_path: "ckpt-5"\nall_model_checkpoint_paths: "ckpt-5"\n')
    status, err = refusals.run_cli([*COMMON, "--num_batches=1", f"--train_dir={tmp_path}"],
                                   capsys)
    assert (status, err) == (2, (
        f"towertrain: error: {state} names the checkpoint {tmp_path}/ckpt-5, but "
        f"{tmp_path}/ckpt-5.index does not exist; restore its files to resume from it, or "
        f"delete {state} to start from the initial values\n"))
    assert not any(name.startswith("ckpt-") for name in os.listdir(tmp_path))
