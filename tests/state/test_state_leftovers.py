"""State files another process wrote are read right when an earlier, different
writer left them behind: the train_dir lock (its holder's pid), the run
record (an earlier run's settings and final mark) and the checkpoint state
file (the list of checkpoints a resume picks from)."""
import json
import os

from towertrain.state import run_record, train_dir_lock
from towertrain.state.checkpoint import RUN_INFO_FILE

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
