"""Which workers never reached a hung step's exchange: what the step
watchdog (towertrain.engine.run.watchdog) of a multi-worker run adds to its
line when it fires.

The hung collective cannot carry that, so each worker's watch leaves a mark
beside it: one small file per task, `task-K.json` ({"step", "phase",
"reached"}), in a folder every worker reads: `<--train_dir>/step_marks`, else
(no --train_dir, or one that is not a local path) a folder of the machine's
temp dir named after the cluster's addresses, which only workers on one
machine share. Files, because they need nothing from the stuck runtime.
TensorFlow 2.21 has a key-value store (context.set_config_key_value), but
only with its coordination service on: the store lives in the chief's
process (gone with it), and the service's heartbeats end every task once
one stops answering, where the peer watch and the elastic launcher need the
survivors to outlive a lost peer.

A mark costs a healthy step nothing: a worker's watch writes one only once
its step has run half the limit (the watch then reads the step's phase, and
writes again when the phase moves on); the watch that fires at the limit
reads the others' marks. A worker held outside its step function's phases
(between steps: a save, a callback) or stopped writes none for the step, and
is named as leaving none.
"""
import hashlib
import json
import os
import tempfile

FOLDER = "step_marks"  # under --train_dir


def folder_for(cluster, train_dir=None):
    """Where the marks of `cluster`'s workers go (see the module's docstring)."""
    if train_dir and "://" not in str(train_dir):
        return os.path.join(str(train_dir), FOLDER)
    key = hashlib.sha1(",".join(cluster.workers).encode()).hexdigest()[:12]
    return os.path.join(tempfile.gettempdir(), f"towertrain-step-marks-{key}")


class ExchangeMarks:
    """This task's mark, and the words for the others' at a hung step."""

    def __init__(self, cluster, folder):
        self.cluster = cluster
        self.folder = folder

    def _path(self, index):
        return os.path.join(self.folder, f"task-{index}.json")

    def clear(self):
        """Removes this task's mark (one a run before this one left)."""
        try:
            os.remove(self._path(self.cluster.task_index))
        except OSError:
            pass

    def publish(self, step, phase, reached):
        """This task is in `phase` of `step`; reached: its exchange has begun.
        Written whole (a reader never sees half a mark); a folder that cannot
        be written costs the line its names, never the watch."""
        try:
            os.makedirs(self.folder, exist_ok=True)
            path = self._path(self.cluster.task_index)
            partial = f"{path}.{os.getpid()}.partial"
            with open(partial, "w") as f:
                json.dump({"step": step, "phase": phase, "reached": bool(reached)}, f)
            os.replace(partial, path)
        except OSError:
            pass

    def _read(self, index):
        try:
            with open(self._path(index)) as f:
                mark = json.load(f)
            return int(mark["step"]), str(mark["phase"]), bool(mark["reached"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def describe(self, step):
        """The other tasks at `step`'s exchange, in words: those that never
        reached it first (with the phase they were in), those whose mark for
        `step` is missing, then those that reached it."""
        never, unmarked, reached = [], [], []
        for index in range(self.cluster.num_workers):
            if index == self.cluster.task_index:
                continue
            name = self.cluster.describe(index)
            mark = self._read(index)
            if mark is None:
                unmarked.append(f"{name} left no mark")
            elif mark[0] != step:
                unmarked.append(f"{name} left no mark (its last: step {mark[0]}, in {mark[1]})")
            elif mark[2]:
                reached.append(name)
            else:
                never.append(f"{name} never reached the exchange of step {step} "
                             f"(last in {mark[1]})")
        words = list(never)
        if unmarked:
            words.append(f"at step {step}, " + ", ".join(unmarked)
                         + f" (stopped, held between steps, or not sharing {self.folder})")
        if reached:
            words.append(", ".join(reached) + f" reached the exchange of step {step}")
        return "; ".join(words)
