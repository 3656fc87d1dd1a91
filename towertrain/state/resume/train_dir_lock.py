"""One training run per --train_dir: an OS lock its chief holds while it runs.

Two runs saving into one train_dir overwrite each other's checkpoints (both
saved ckpt-70). The lock is fcntl's: the kernel drops it when the process
ends, however it ends, so a crashed run leaves nothing stuck and no stale
file to delete. Only a training run's chief takes it; readers (--eval, the
evaluator following checkpoints, export) and non-chief workers never do.
The lock file stays in place: deleting it on release would let two later
runs lock two different files of the same name.
"""
import fcntl
import os

from towertrain.errors import CheckpointError

LOCK_FILE = ".towertrain.lock"


class TrainDirLock:
    """The held lock of one train_dir; release() (or the process's end) frees it."""

    def __init__(self, train_dir):
        self.path = os.path.join(train_dir, LOCK_FILE)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(self._fd, 64).decode(errors="replace").strip()
            os.close(self._fd)
            self._fd = None
            raise CheckpointError(
                f"--train_dir={train_dir} is in use by another training run"
                + (f" (process {holder})" if holder else "")
                + "; wait for it to end, stop it, or use another --train_dir") from None
        os.ftruncate(self._fd, 0)  # the holder's pid, for the message above
        os.write(self._fd, str(os.getpid()).encode())

    def release(self):
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def acquire(train_dir):
    """Locks `train_dir` (which exists) for this process's training run, or
    raises CheckpointError naming the process that holds it."""
    return TrainDirLock(train_dir)
