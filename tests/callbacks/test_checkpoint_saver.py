"""When a run saves (every N steps at a fence, every S seconds once the
staged batches are trained on), what its header says of a train_dir's
leftovers, and a diverged checkpoint set aside over an earlier run's files
(callbacks/checkpointing.py, state/resume). The timing cases drive CheckpointSaver with a
clock the test sets, so a save one step or one second late fails."""
import os
import types

import pytest

import towertrain
from towertrain.callbacks import checkpointing
from towertrain.errors import TrainingDivergedError
from towertrain.state import checkpoint as ckpt_lib
from towertrain.state import resume
from towertrain.state.resume.checkpointer import Checkpointer

import helpers.tiny_models as tiny_models


class FakeHandles:
    """The staging as the loop sees it: `staged` batches ahead of the step;
    after drain() nothing is staged anew, so each step trains one of them."""

    def __init__(self, staged=0):
        self.fences, self.staged, self.draining = [], staged, False

    def add_fence(self, step):
        self.fences.append(step)

    def drain(self):
        self.draining = True
        return self.staged

    def staged_batches(self):
        return self.staged if self.draining else 1


class FakeCheckpointer:
    def __init__(self, handles):
        self.handles, self.saved_at = handles, []
        self.train_dir, self.rebuilt, self.last_saved_step = "run", [], None

    def save(self):
        # As Checkpointer.save: a timed save with batches staged is an error.
        assert not self.handles.draining or not self.handles.staged_batches()
        self.saved_at.append(self.step)
        return f"run/ckpt-{self.step}"


class FakeLoop:
    def __init__(self, start_step=0, error=None, step=0, stop_reason=None, stop_is_final=False,
                 completed=False):
        self.start_step, self.error, self.step = start_step, error, step
        self.stop_reason, self.stop_is_final, self.completed = (stop_reason, stop_is_final,
                                                                completed)


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


def _saver(monkeypatch, save_steps=None, save_secs=None, staged=0, start_step=0, now=100.0):
    clock = Clock(now)
    monkeypatch.setattr(checkpointing, "time", types.SimpleNamespace(monotonic=clock))
    checkpointer = FakeCheckpointer(FakeHandles(staged))
    saver = checkpointing.CheckpointSaver(checkpointer, save_steps, save_secs, write=None)
    saver.before_train(FakeLoop(start_step))
    return saver, checkpointer, clock


def _step(saver, checkpointer, step):
    handles = checkpointer.handles
    if handles.draining and handles.staged:
        handles.staged -= 1  # this step trained one of the staged batches
    checkpointer.step = step
    saver.after_step(step, None, 0.1)


@pytest.mark.parametrize("start_step, first_fence", [(0, 3), (4, 6), (6, 9)])
def test_saves_every_n_steps_at_the_next_multiple_fenced(monkeypatch, start_step, first_fence):
    saver, checkpointer, _ = _saver(monkeypatch, save_steps=3, start_step=start_step)
    assert checkpointer.handles.fences == [first_fence]
    for step in range(start_step + 1, first_fence + 4):
        _step(saver, checkpointer, step)
    assert checkpointer.saved_at == [first_fence, first_fence + 3]
    assert checkpointer.handles.fences == [first_fence, first_fence + 3, first_fence + 6]


@pytest.mark.parametrize("start", [100.0, 3.0])  # the clock counts from boot: any value
def test_saves_once_save_secs_have_passed_not_a_moment_before(monkeypatch, start):
    saver, checkpointer, clock = _saver(monkeypatch, save_secs=5, now=start)
    clock.now = start + 4.75
    _step(saver, checkpointer, 1)
    assert checkpointer.saved_at == []
    clock.now = start + 5  # exactly save_secs after the start: due
    _step(saver, checkpointer, 2)
    assert checkpointer.saved_at == [2]
    clock.now = start + 9.5  # counted from the save, not from the start
    _step(saver, checkpointer, 3)
    assert checkpointer.saved_at == [2]
    clock.now = start + 10
    _step(saver, checkpointer, 4)
    assert checkpointer.saved_at == [2, 4]


@pytest.mark.parametrize("staged", [0, 2])
@pytest.mark.parametrize("first", [7, 1007])  # past 256 equal steps are distinct ints
def test_a_timed_save_waits_for_the_staged_batches_and_not_a_step_longer(monkeypatch, staged,
                                                                          first):
    """Batches staged when the time is up: the save is the step that trains
    the last of them (the staging areas then empty), not the one after; with
    none staged, the step the time was up."""
    saver, checkpointer, clock = _saver(monkeypatch, save_secs=5, staged=staged)
    clock.now = 106.0
    for step in range(first, first + staged):
        _step(saver, checkpointer, step)
    assert checkpointer.saved_at == []
    _step(saver, checkpointer, first + staged)
    assert checkpointer.saved_at == [first + staged]
    _step(saver, checkpointer, first + staged + 1)  # the clock starts again at the save
    assert checkpointer.saved_at == [first + staged]


def test_the_header_names_every_removed_folder_and_the_latest_recovered_file(monkeypatch):
    saver, checkpointer, _ = _saver(monkeypatch)
    checkpointer.rebuilt = ["ckpt-2", "ckpt-4", "ckpt-6"]
    saver.resumed = resume.Resumed(checkpointer)
    saver.resumed.removed = ["ckpt-8_temp", "ckpt-10_temp"]
    info = dict(saver.header_info())
    assert info["Removed"] == ("ckpt-8_temp/, ckpt-10_temp/: unfinished saves of a run that "
                               "was killed (the checkpoints are whole)")
    assert info["Recovered"] == ("the train_dir's `checkpoint` state file was missing; "
                                 "rewritten from its files (ckpt-2, ckpt-4, ckpt-6), so the run "
                                 "resumes from ckpt-6 instead of starting over")


@pytest.mark.parametrize("loop, line, final", [
    (FakeLoop(start_step=4, step=9, completed=True), "Saved checkpoint at step 9 to run/ckpt-9",
     True),
    (FakeLoop(start_step=4, step=6, stop_reason="SIGTERM"),
     "Received SIGTERM: saved checkpoint at step 6 to run/ckpt-6", False),
    # A stop that ends the run as planned (--stop_at_top_1_accuracy) is no signal.
    (FakeLoop(start_step=4, step=6, stop_reason="top-1 reached", stop_is_final=True,
              completed=True), "Saved checkpoint at step 6 to run/ckpt-6", True),
    # A resume with nothing left to train saves nothing new and says nothing.
    (FakeLoop(start_step=9, step=9, completed=True), None, True),
])
def test_the_last_save_says_why_and_a_completed_run_marks_its_checkpoint_final(
        monkeypatch, loop, line, final):
    from towertrain.state import run_record
    marked = []
    monkeypatch.setattr(run_record, "mark_final", lambda *args: marked.append(args))
    lines = []
    checkpointer = FakeCheckpointer(FakeHandles())
    checkpointer.step = loop.step
    checkpointer.save = lambda: setattr(checkpointer, "last_saved_step", loop.step) or \
        f"run/ckpt-{loop.step}"
    saver = checkpointing.CheckpointSaver(checkpointer, write=lines.append)
    saver.loop = loop
    saver.after_train()
    assert lines == ([line] if line else [])
    assert marked == ([("run", loop.step, f"run/ckpt-{loop.step}")] if final else [])


@pytest.fixture
def trainer():
    trainer = towertrain.Trainer(tiny_models.tiny_params(num_batches=2))
    yield trainer
    trainer.close()


def _save_at(checkpointer, *steps):
    for step in steps:
        checkpointer.state.step.assign(step)
        checkpointer.save()


def test_set_aside_makes_ckpt_9_the_latest_and_max_to_keep_counts_the_rest(trainer, tmp_path):
    """ckpt-9 sorts after ckpt-10 as a string: the earlier checkpoints are
    every one left, named relative to train_dir, the latest the last of them;
    and max_to_keep still counts them (a state file without their times made
    them kept for ever)."""
    checkpointer = Checkpointer(trainer._run_handles(), trainer.plan, str(tmp_path),
                                max_to_keep=3)
    _save_at(checkpointer, 8, 9, 10)
    checkpointer.set_aside(str(tmp_path / "ckpt-10"))
    state = (tmp_path / ckpt_lib.STATE_FILE).read_text().splitlines()
    assert state[:3] == ['model_checkpoint_path: "ckpt-9"', 'all_model_checkpoint_paths: "ckpt-8"',
                         'all_model_checkpoint_paths: "ckpt-9"'], state
    # The step after the set-aside is saved again (it was not saved: it diverged).
    assert checkpointer.last_saved_step is None
    _save_at(checkpointer, 10, 11)
    assert sorted(int(p.name[5:-6]) for p in tmp_path.glob("ckpt-*.index")) == [9, 10, 11]


def test_a_diverged_run_sets_aside_over_an_earlier_runs_diverged_files(trainer, tmp_path):
    """An earlier run diverged at the same step and left diverged-ckpt-1000.*;
    the new set-aside replaces them (step 1000 also checks the step is
    compared by value: ints past 256 are distinct objects)."""
    train_dir = str(tmp_path)
    checkpointer = Checkpointer(trainer._run_handles(), trainer.plan, train_dir)
    _save_at(checkpointer, 999, 1000)
    for suffix in (".index", ".data-00000-of-00001"):
        with open(os.path.join(train_dir, "diverged-ckpt-1000" + suffix), "wb") as f:
            f.write(b"left by an earlier run")
    lines = []
    saver = checkpointing.CheckpointSaver(checkpointer, write=lines.append)
    saver.loop = FakeLoop(error=TrainingDivergedError("loss is nan"), step=1001)
    saver.close()
    assert lines == [f"Set aside {train_dir}/ckpt-1000 as {train_dir}/diverged-ckpt-1000: the "
                     f"step after it diverges whatever the learning rate; resuming starts from "
                     f"{train_dir}/ckpt-999"]
    reader = ckpt_lib.tf.train.load_checkpoint(os.path.join(train_dir, "diverged-ckpt-1000"))
    assert int(reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE")) == 1000
    assert ckpt_lib.latest(train_dir) == os.path.join(train_dir, "ckpt-999")


def test_a_non_chief_reads_the_latest_file_of_a_lost_state_file_and_writes_nothing(
        trainer, tmp_path):
    """A reader (writer=False, a non-chief worker) takes the latest ckpt-N on
    disk and leaves the state file to the chief; the chief rewrites it."""
    train_dir = str(tmp_path)
    _save_at(Checkpointer(trainer._run_handles(), trainer.plan, train_dir), 2, 4)
    os.remove(os.path.join(train_dir, ckpt_lib.STATE_FILE))
    reader = Checkpointer(trainer._run_handles(), trainer.plan, train_dir,
                          writer=False)
    assert reader.rebuilt == []
    assert reader.restore_latest() == os.path.join(train_dir, "ckpt-4")
    assert not os.path.exists(os.path.join(train_dir, ckpt_lib.STATE_FILE))
    chief = Checkpointer(trainer._run_handles(), trainer.plan, train_dir)
    assert chief.rebuilt == ["ckpt-2", "ckpt-4"]
    assert os.path.exists(os.path.join(train_dir, ckpt_lib.STATE_FILE))


def test_set_aside_of_the_only_checkpoint_leaves_the_initial_values_to_resume(trainer,
                                                                              tmp_path):
    train_dir = str(tmp_path)
    checkpointer = Checkpointer(trainer._run_handles(), trainer.plan, train_dir)
    _save_at(checkpointer, 3)
    lines = []
    saver = checkpointing.CheckpointSaver(checkpointer, write=lines.append)
    saver.loop = FakeLoop(error=TrainingDivergedError("loss is nan"), step=4)
    saver.close()
    assert lines == [f"Set aside {train_dir}/ckpt-3 as {train_dir}/diverged-ckpt-3: the step "
                     "after it diverges whatever the learning rate; resuming starts from the "
                     "initial values (no earlier checkpoint)"]
    assert ckpt_lib.latest(train_dir) is None
    assert sorted(os.listdir(train_dir)) == ["diverged-ckpt-3.data-00000-of-00001",
                                             "diverged-ckpt-3.index"]


def test_a_checkpoint_older_than_the_step_before_the_divergence_stays(trainer, tmp_path):
    """Only the step right before a diverged step leads back to it; an older
    checkpoint resumes into other steps, so it is kept as the latest."""
    train_dir = str(tmp_path)
    checkpointer = Checkpointer(trainer._run_handles(), trainer.plan, train_dir)
    _save_at(checkpointer, 2, 4)
    lines = []
    saver = checkpointing.CheckpointSaver(checkpointer, write=lines.append)
    saver.loop = FakeLoop(error=TrainingDivergedError("loss is nan"), step=6)
    saver.close()
    assert lines == []
    assert ckpt_lib.latest(train_dir) == os.path.join(train_dir, "ckpt-4")


def test_five_checkpoints_are_kept_unless_told(trainer, tmp_path):
    checkpointer = Checkpointer(trainer._run_handles(), trainer.plan, str(tmp_path))
    _save_at(checkpointer, *range(1, 8))
    assert sorted(int(p.name[5:-6]) for p in tmp_path.glob("ckpt-*.index")) == [3, 4, 5, 6, 7]


@pytest.mark.parametrize("bad, listed", [(1, "{0}"), (3, "{0}, {1}, {2}"),
                                         (4, "{0}, {1}, {2}, ...")])
def test_a_non_finite_state_is_not_saved_and_the_error_names_three(trainer, tmp_path, bad,
                                                                      listed):
    checkpointer = Checkpointer(trainer._run_handles(), trainer.plan, str(tmp_path))
    _save_at(checkpointer, 1)
    for key in sorted(checkpointer.state.variables)[:bad]:
        variable = checkpointer.state.variables[key]
        variable.assign(ckpt_lib.tf.fill(variable.shape, float("nan")))
    names = sorted(checkpointer.state.variables)[:min(bad, 3)]
    checkpointer.state.step.assign(2)
    with pytest.raises(TrainingDivergedError) as raised:
        checkpointer.save()
    assert str(raised.value) == (
        f"not saving step 2: {bad} variable(s) are not finite ({listed.format(*names)}); the "
        f"last good checkpoint stays {tmp_path}/ckpt-1; try a lower --init_learning_rate "
        f"(now 0.1)")


def test_a_nan_in_an_optimizer_slot_alone_is_not_saved(trainer, tmp_path):
    checkpointer = Checkpointer(trainer._run_handles(), trainer.plan, str(tmp_path))
    _save_at(checkpointer, 1)
    key = sorted(checkpointer.state.slots)[0]
    [(name, slot)] = checkpointer.state.slots[key].items()  # momentum's one slot
    slot.assign(ckpt_lib.tf.fill(slot.shape, float("inf")))
    checkpointer.state.step.assign(2)
    with pytest.raises(TrainingDivergedError, match=rf"^not saving step 2: 1 variable\(s\) are "
                                                    rf"not finite \({key}/{name}\)"):
        checkpointer.save()


def test_a_step_saved_once_is_not_written_again(trainer, tmp_path, monkeypatch):
    """The run's end saves the step a periodic save just wrote: once is enough
    (step 1000: equal steps past 256 are distinct ints)."""
    checkpointer = Checkpointer(trainer._run_handles(), trainer.plan, str(tmp_path))
    _save_at(checkpointer, 1000)
    writes = []
    monkeypatch.setattr(checkpointer.manager, "save", lambda **kw: writes.append(kw))
    assert checkpointer.save() == str(tmp_path / "ckpt-1000")
    assert writes == []


def test_a_failed_save_removes_its_temporary_folder_and_its_own_files_only(tmp_path):
    """A save that failed while its files were moved into place leaves some
    of ckpt-N.* beside ckpt-N_temp/; the other checkpoints stay."""
    for name in ("ckpt-4.index", "ckpt-4.data-00000-of-00001", "ckpt-40.index",
                 "ckpt-5.index", "ckpt-5.data-00000-of-00001"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "ckpt-5_temp").mkdir()
    (tmp_path / "ckpt-5_temp" / "part").write_bytes(b"x")
    Checkpointer._remove_partial(str(tmp_path / "ckpt-5"))
    assert sorted(os.listdir(tmp_path)) == ["ckpt-4.data-00000-of-00001", "ckpt-4.index",
                                            "ckpt-40.index"]


@pytest.mark.parametrize("door", ["data_dir", "from_dataset"])
def test_the_save_after_a_lost_peer_leaves_staged_batches_only_to_a_step_positioned_input(
        door, tmp_path):
    """A lost peer's last save, one batch staged: files under --data_dir work
    their position out from the step (the resume reads the staged batch
    again), so it saves; a user's tf.data iterator is in the checkpoint, past
    that batch, so the last periodic checkpoint stays (any save refuses)."""
    import numpy as np
    import tensorflow as tf
    from helpers import cifar_files
    from towertrain.input_pipeline import from_dataset
    flags, source = {}, None
    if door == "data_dir":
        flags["data_dir"] = cifar_files.write_dataset(str(tmp_path / "data"), 32, 8)
    else:
        rng = np.random.default_rng(3)
        arrays = (rng.standard_normal((32, 32, 32, 3)).astype(np.float32),
                  rng.integers(0, 10, 32).astype(np.int32))
        source = from_dataset(tf.data.Dataset.from_tensor_slices(arrays).repeat(),
                              global_batch=8)
    trainer = towertrain.Trainer(towertrain.Params(
        model="trivial", device="cpu", num_gpus=1, batch_size=8, num_batches=4,
        num_warmup_batches=0, staging_depth=1, data_format="NHWC", **flags),
        input_source=source)
    try:
        trainer.step()
        assert trainer.staged_batches() == 1
        checkpointer = Checkpointer(trainer._run_handles(), trainer.plan,
                                    str(tmp_path / "last"))
        assert checkpointer.position_in_checkpoint() == (door == "from_dataset")
        if door == "data_dir":
            assert checkpointer.save(last=True) == str(tmp_path / "last" / "ckpt-1")
        else:
            with pytest.raises(RuntimeError, match="batches still staged"):
                checkpointer.save(last=True)
        with pytest.raises(RuntimeError, match="batches still staged"):
            Checkpointer(trainer._run_handles(), trainer.plan, str(tmp_path / "b")).save()
    finally:
        trainer.close()
