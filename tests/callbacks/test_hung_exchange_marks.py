"""Multi-worker, the step watchdog's line names the tasks that never reached
the hung step's exchange, from the marks each worker's watch leaves aside
once its step has run half the limit (towertrain.engine.run.exchange_marks;
tests/cluster/test_hung_exchange.py runs it with 2 workers)."""
import json
import os
import re
import tempfile

import pytest

from towertrain.config.cluster_spec import Cluster
from towertrain.engine.run import exchange_marks
from towertrain.engine.run import watchdog as watchdog_lib

CLUSTER = Cluster(workers=("a:1", "b:2", "c:3", "d:4"))


def _watch(folder, step=7):
    """Task 0's watch over `step` with an 8 s limit, in its input."""
    watch = watchdog_lib.Watchdog(timeout=8, exit=lambda status: None,
                                  marks=exchange_marks.ExchangeMarks(CLUSTER, folder))
    watch.finished(0.01, after_warmup=True)
    watch._step = step
    watchdog_lib.mark(watchdog_lib.INPUT)
    return watch


def _mark(folder, task, step, phase, reached):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"task-{task}.json"), "w") as f:
        json.dump({"step": step, "phase": phase, "reached": reached}, f)


def _others(line):
    """What the line says of the other tasks (between the phase and the cause)."""
    found = re.fullmatch(r"step 7 has run 9 s, past --step_timeout_secs=8, last in input "
                         r"\(waiting for the step's batch\)(.*): a hung collective, peer or "
                         r"kernel; exiting with status 1 so a launcher restarts the run", line)
    assert found, line
    return found.group(1)


def test_the_line_names_who_never_reached_the_exchange_who_left_no_mark_and_who_did(tmp_path):
    folder = str(tmp_path / "marks")
    _mark(folder, 1, 7, "its towers", False)
    _mark(folder, 2, 7, "its gradient exchange", True)
    _mark(folder, 3, 5, "its towers", False)  # an earlier step's: says nothing of step 7
    watch = _watch(folder)
    try:
        assert _others(watch.message(9.0, 8)) == (
            "; worker task 1 (b:2) never reached the exchange of step 7 (last in its towers)"
            "; at step 7, worker task 3 (d:4) left no mark (its last: step 5, in its towers) "
            f"(stopped, held between steps, or not sharing {folder})"
            "; worker task 2 (c:3) reached the exchange of step 7")
        # The firing task's own mark, for the others whose watch fires later.
        with open(os.path.join(folder, "task-0.json")) as f:
            assert json.load(f) == {"step": 7, "phase": "its input", "reached": False}
    finally:
        watchdog_lib.mark(None)


def test_when_every_task_reached_the_exchange_no_one_is_named_as_missing_it(tmp_path):
    folder = str(tmp_path / "marks")
    for task in (1, 2, 3):
        _mark(folder, task, 7, "its gradient exchange", True)
    watch = _watch(folder)
    try:
        assert _others(watch.message(9.0, 8)) == (
            "; worker task 1 (b:2), worker task 2 (c:3), worker task 3 (d:4) reached the "
            "exchange of step 7")
    finally:
        watchdog_lib.mark(None)


class _Rounds:
    """The watch's pause: no wait, `rounds` rounds."""

    def __init__(self, rounds):
        self.left = rounds

    def wait(self, timeout=None):
        self.left -= 1
        return self.left < 0


@pytest.mark.parametrize("ran, marked", [(3.9, False), (4.1, True)])
def test_a_step_past_half_the_limit_leaves_its_mark_and_a_run_starts_without_an_old_one(
        tmp_path, monkeypatch, ran, marked):
    folder = str(tmp_path / "marks")
    _mark(folder, 0, 3, "its towers", False)  # a run before this one's
    watch = _watch(folder)
    watch._stop.set()  # the thread started() starts ends at once: the test runs its rounds
    watch.started(7)
    watch._thread.join(10)
    assert not os.path.exists(os.path.join(folder, "task-0.json"))
    watchdog_lib.mark(watchdog_lib.INPUT)
    monkeypatch.setattr(watchdog_lib.time, "monotonic", lambda: watch._since + ran)
    watch._stop = _Rounds(1)
    try:
        watch._watch()
    finally:
        watchdog_lib.mark(None)
    path = os.path.join(folder, "task-0.json")
    assert os.path.exists(path) == marked
    if marked:
        with open(path) as f:
            assert json.load(f) == {"step": 7, "phase": "its input", "reached": False}


def test_the_marks_are_in_the_train_dir_else_a_temp_folder_of_the_cluster(tmp_path):
    assert exchange_marks.folder_for(CLUSTER, str(tmp_path)) == str(tmp_path / "step_marks")
    own = exchange_marks.folder_for(CLUSTER)
    assert os.path.dirname(own) == tempfile.gettempdir()
    assert exchange_marks.folder_for(CLUSTER, "gs://bucket/run") == own
    assert own != exchange_marks.folder_for(Cluster(workers=("a:1", "b:5")))


class _PhaseVariable:
    """The step function's phase variable as the watch reads it."""

    def __init__(self, value):
        self.value = value

    def numpy(self):
        return self.value


@pytest.mark.parametrize("name,variable,reached", [
    (None, None, False),                                 # the step not begun
    (watchdog_lib.INPUT, None, False),
    (watchdog_lib.DEVICE_SYNC, None, True),              # after the update: past it
    (watchdog_lib.STEP_FUNCTION, _PhaseVariable(watchdog_lib.TOWERS), False),
    (watchdog_lib.STEP_FUNCTION, _PhaseVariable(watchdog_lib.EXCHANGE), True),
    (watchdog_lib.STEP_FUNCTION, _PhaseVariable(watchdog_lib.UPDATE), True),
])
def test_each_phase_says_whether_the_step_reached_its_exchange(name, variable, reached):
    watchdog_lib.mark(name, variable)
    try:
        assert watchdog_lib._read_phase()[2] is reached
    finally:
        watchdog_lib.mark(None)


def test_a_mark_is_read_again_until_it_reached_the_exchange_or_could_not_be_read(tmp_path):
    """Past half the limit the watch reads the phase again while the mark could
    still move: none yet for this step, or one short of the exchange."""
    watch = _watch(str(tmp_path / "marks"))
    try:
        assert watch._mark_may_move()  # no mark for step 7 yet
        watch._marked = (7, "its towers", False)
        assert watch._mark_may_move()
        # Short of the step function: its input, or its start.
        for words in ("its input", "its step's start"):
            watch._marked = (7, words, False)
            assert watch._mark_may_move(), words
        watch._marked = (7, "its gradient exchange", True)
        assert not watch._mark_may_move()
        watch._marked = (7, watchdog_lib.UNREAD_MARK, False)
        assert not watch._mark_may_move()
        watch._marked = (6, "its gradient exchange", True)  # an earlier step's
        assert watch._mark_may_move()
    finally:
        watchdog_lib.mark(None)


def test_a_mark_is_written_again_only_when_it_moved_on(tmp_path):
    """The same place in the same step leaves the file as it is (each write
    replaces it: a new file); another phase, or the next step, rewrites it."""
    folder = str(tmp_path / "marks")
    watch = _watch(folder)
    mark = os.path.join(folder, "task-0.json")
    try:
        watch.started(7)
        watch._leave_mark(("x", "its towers", False))
        first = os.stat(mark).st_ino
        watch._leave_mark(("x", "its towers", False))
        assert os.stat(mark).st_ino == first
        watch._leave_mark(("x", "its gradient exchange", True))
        assert os.stat(mark).st_ino != first
    finally:
        watch.close()


def test_a_phase_variable_not_yet_set_reads_as_unread_not_as_the_towers():
    """The variable starts at 0, before the step function enters its towers."""
    watchdog_lib.mark(watchdog_lib.STEP_FUNCTION, _PhaseVariable(0))
    try:
        words, mark_words, reached = watchdog_lib._read_phase()
        assert "its phase could not be read" in words
        assert (mark_words, reached) == (watchdog_lib.UNREAD_MARK, False)
    finally:
        watchdog_lib.mark(None)


def test_a_watched_run_leaves_no_mark_behind_when_it_closes(tmp_path):
    folder = str(tmp_path / "marks")
    watch = _watch(folder)
    watch.started(7)  # starts the watch thread
    watch._leave_mark(watchdog_lib._read_phase())
    mark = os.path.join(folder, "task-0.json")
    assert os.path.exists(mark)
    watch.close()
    assert not os.path.exists(mark)


@pytest.mark.parametrize("timeout,poll", [(8, 0.8), (5, 0.5), (30, 1.0), (None, 1.0)])
def test_an_explicit_limit_is_checked_within_a_tenth_of_it_at_most_every_second(timeout, poll):
    assert watchdog_lib.Watchdog(timeout=timeout)._poll == pytest.approx(poll)
