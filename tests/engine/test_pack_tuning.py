"""--gradient_pack_mb=auto (towertrain/engine/run/pack_tuning.py): which sizes
are timed, how the pick is made (the fastest of each candidate's slowest
worker), and, on 2 CPU devices, that an auto run trains to the bits of a run
on any fixed candidate, says its pick in the header and the run record, and
that a resume trains on the recorded pick without timing again. The 2-worker
decision is tests/engine/test_pack_tuning_workers.py's."""
import shutil

import numpy as np
import pytest
import tensorflow as tf

import helpers.tiny_models  # noqa: F401 - registers tiny_wide (4.2 MB of gradients)
from towertrain import Params, ParamsError, Trainer
from towertrain.engine.run import pack_tuning
from towertrain.state import run_record

# tiny_wide: 8x8x3 -> 5200 -> 10, float32: 4,222,440 B of gradients.
WIDE = [tf.TensorSpec([192, 5200]), tf.TensorSpec([5200]), tf.TensorSpec([5200, 10]),
        tf.TensorSpec([10])]


@pytest.mark.parametrize("variables,expected", [
    ([tf.TensorSpec([1000])], [0.0]),  # 4 KB: every size is one pack
    (WIDE, [0.0, 4.0, 1.0]),  # 64 and 16 MB are one pack too
    ([tf.TensorSpec([5_000_000])], [0.0, 16.0, 4.0, 1.0]),  # 20 MB
    ([tf.TensorSpec([25_000_000])], [0.0, 64.0, 16.0, 4.0, 1.0]),  # 100 MB
    # Two dtypes: a size is new if it cuts either differently.
    ([tf.TensorSpec([500_000]), tf.TensorSpec([1_500_000], tf.float16)], [0.0, 1.0])])
def test_candidates_are_the_sizes_that_cut_distinct_plans(variables, expected):
    assert pack_tuning.candidates(variables) == expected


class _Clock:
    """time.perf_counter for the tuning: each step() advances it by the next duration."""

    def __init__(self, durations):
        self.now, self.durations = 0.0, list(durations)

    def __call__(self):
        return self.now

    def step(self):
        self.now += self.durations.pop(0)
        return "result"


def _tuning(monkeypatch, durations, other_worker=None):
    """A PackTuning of WIDE whose steps take `durations` (seconds) here and
    whose other worker's fastest steps are `other_worker` (None: one process)."""
    clock = _Clock(durations)
    monkeypatch.setattr(pack_tuning.time, "perf_counter", clock)
    installed, sites = [], []

    def cluster_max(values, site):
        sites.append((site, list(values)))
        return [max(a, b) for a, b in zip(values, other_worker or values)]
    tuning = pack_tuning.PackTuning(WIDE, installed.append, cluster_max)
    return tuning, clock, installed, sites


def test_each_candidate_runs_in_turn_and_the_fastest_is_picked(monkeypatch):
    """3 candidates x 2 steps: the first round builds (untimed, whatever it
    takes), the second is timed; 1 MB's 2 s beats one pack's 3 s and 4 MB's 2.5 s."""
    tuning, clock, installed, sites = _tuning(monkeypatch, [0.5, 9, 9, 3, 2.5, 2])
    lines, entries = [], []
    tuning.start(1, 6, write=lines.append, on_pick=entries.append)
    assert tuning.tuning and tuning.steps_each == 2
    results = [tuning.run_step(clock.step) for _ in range(6)]
    assert results == ["result"] * 6 and not tuning.tuning
    assert installed == [None, 4 * 10**6, 10**6] * 2 + [10**6]
    assert sites == [("pack_timings", [3, 2.5, 2])]
    assert tuning.pick == 1.0
    assert lines == ["Gradient packs: picked 1 MB: 5 packs (of at most 1.0 MB, reverse layer "
                     "order): float32 844.5 KB, 844.5 KB, 844.5 KB, 844.5 KB, 844.5 KB (timed "
                     "in warm-up steps 1..6, the fastest of 1 step each: one pack per dtype "
                     "3000.0 ms, 4 MB 2500.0 ms, 1 MB 2000.0 ms)"]
    assert entries == [{"pack_mb": 1.0, "candidates_mb": [0.0, 4.0, 1.0],
                        "step_ms": [3000.0, 2500.0, 2000.0]}]


def test_the_pick_is_the_fastest_of_each_candidates_slowest_worker(monkeypatch):
    """Here 4 MB is fastest (1 s), but the other worker takes 5 s on it: the
    step waits for the slowest, so 1 MB (max 2 s) is every worker's pick.
    The fastest of a candidate's timed steps counts (4 steps each: 3 timed)."""
    tuning, clock, _, sites = _tuning(
        monkeypatch, [9, 9, 9] + [3, 1, 2] + [4, 1, 2] + [3, 6, 7], other_worker=[1, 5, 1])
    tuning.start(11, 12)
    assert tuning.steps_each == 4
    for _ in range(11):
        tuning.run_step(clock.step)
    assert tuning.tuning and not sites  # 12 steps: 3 candidates x 4
    tuning.run_step(clock.step)
    assert not tuning.tuning
    assert sites == [("pack_timings", [3, 1, 2])]
    assert tuning.times == [3, 5, 2] and tuning.pick == 1.0


@pytest.mark.parametrize("times,pick", [
    ([2.0, 1.2, 1.0, 1.5], 2),      # only the fastest is within 3% of itself
    ([2.0, 1.029, 1.0, 1.5], 1),    # just inside the margin: the larger packs
    ([2.0, 1.03, 1.0, 1.5], 1),     # at the margin
    ([2.0, 1.031, 1.0, 1.5], 2),    # just outside: the gain is more than noise
    ([1.02, 1.01, 1.0, 1.5], 0),    # every candidate within it: the first
    ([1.5, 2.0, 1.0, 1.0], 2),      # a tie of the fastest: the larger packs
])
def test_a_smaller_size_is_picked_only_for_a_gain_above_the_margin(times, pick):
    assert pack_tuning.PICK_MARGIN == 0.03
    assert pack_tuning.pick_index(times) == pick


def test_the_pick_keeps_the_larger_packs_within_the_margin(monkeypatch):
    """1 MB's 2.0 s is fastest, but 4 MB's 2.05 s lies within 3% of it: the
    larger packs are kept (a gain two timed steps cannot tell from noise)."""
    tuning, clock, installed, _ = _tuning(monkeypatch, [9, 9, 9, 3, 2.05, 2])
    tuning.start(1, 6)
    for _ in range(6):
        tuning.run_step(clock.step)
    assert tuning.pick == 4.0 and installed[-1] == 4 * 10**6


def test_warm_up_steps_left_over_train_on_the_pick(monkeypatch):
    """7 warm-up steps for 3 candidates: 2 each, the 7th already on the pick."""
    tuning, clock, installed, _ = _tuning(monkeypatch, [9, 9, 9, 1, 2, 3])
    tuning.start(1, 7)
    assert tuning.steps_each == 2
    for _ in range(6):
        tuning.run_step(clock.step)
    assert not tuning.tuning and tuning.pick == 0.0 and installed[-1] is None


def test_a_resume_takes_the_chiefs_recorded_pick(monkeypatch):
    """Multi-worker, a non-chief worker knows no record: the chief's pick
    (4 MB) reaches it through the max, and nothing is timed."""
    tuning, _, installed, sites = _tuning(monkeypatch, [], other_worker=[4.0])
    tuning.start(9, 1, recorded=None, resumed=True)
    assert sites == [("pack_pick", [pack_tuning.NONE_RECORDED])]
    assert tuning.pick == 4.0 and tuning.kept and not tuning.tuning
    assert installed == [4 * 10**6]
    assert "the run record's pick, kept at the resume: not timed again" in tuning.header_text()


def test_a_resume_without_a_recorded_pick_times_again(monkeypatch):
    tuning, _, _, _ = _tuning(monkeypatch, [], other_worker=[pack_tuning.NONE_RECORDED])
    tuning.start(9, 6, recorded=None, resumed=True)
    assert tuning.tuning and not tuning.kept


def test_a_model_of_one_distinct_plan_times_nothing(monkeypatch):
    installed = []
    tuning = pack_tuning.PackTuning([tf.TensorSpec([1000])], installed.append,
                                    lambda values, site: values)
    tuning.start(1, 0)
    assert tuning.pick == 0.0 and not tuning.tuning and installed == [None]
    assert tuning.header_text() == ("auto: one pack per dtype: 1 pack (one per dtype): float32 "
                                    "4.0 KB (the only distinct plan of this model's gradients: "
                                    "nothing to time)")


def test_a_warm_up_too_short_to_time_every_candidate_is_refused():
    tuning = pack_tuning.PackTuning(WIDE, lambda size: None, lambda values, site: values)
    with pytest.raises(ParamsError, match=(
            r"^--gradient_pack_mb=auto: times 3 pack sizes for this model \(one pack per "
            r"dtype, 4 MB, 1 MB\), 2 warm-up steps each, but this run has 5 warm-up steps; "
            r"raise --num_warmup_batches to 6 or more, or give a size \(--gradient_pack_mb=4\)$")):
        tuning.start(1, 5)


# --- On 2 CPU devices: the trainer's side.

def _params(**changes):
    base = dict(model="tiny_wide", device="cpu", num_gpus=2, variable_update="replicated",
                optimizer="momentum", num_warmup_batches=6, num_batches=2, display_every=100)
    base.update(changes)
    return Params(**base)


def _train(params):
    """(lines written, every copy's trainable values, the trainer's exchange) of a run."""
    lines = []
    trainer = Trainer(params)
    try:
        trainer.train(write=lines.append)
        copies = [[v.numpy() for v in copy] for copy in trainer.variables.trainable_copies()]
        return lines, copies, trainer._exchange
    finally:
        trainer.close()


@pytest.fixture(scope="module")
def auto_run(tmp_path_factory):
    train_dir = str(tmp_path_factory.mktemp("auto"))
    lines, copies, exchange = _train(_params(gradient_pack_mb="auto", train_dir=train_dir))
    return train_dir, lines, copies, exchange


def test_an_auto_run_trains_to_the_bits_of_every_candidate(auto_run):
    """Every plan sums the same elements in the same order (pscpu): the auto
    run, which trained on all three in turn, ends where each fixed size does."""
    _, _, copies, _ = auto_run
    for mb in (0.0, 4.0, 1.0):
        _, fixed, _ = _train(_params(gradient_pack_mb=mb))
        for got, want in zip(copies, fixed):
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)


def test_the_header_the_pick_line_and_the_run_record_name_the_pick(auto_run):
    train_dir, lines, _, exchange = auto_run
    text = "\n".join(lines)
    assert ("Gradient packs: auto: timing 3 sizes in turn in warm-up steps 1..6, 2 steps "
            "each: one pack per dtype, 4 MB, 1 MB") in text, text
    entry = run_record.read(train_dir)[run_record.PACK_PICK]
    assert entry["candidates_mb"] == [0.0, 4.0, 1.0] and len(entry["step_ms"]) == 3
    pick = entry["pack_mb"]
    assert pick == entry["candidates_mb"][int(np.argmin(entry["step_ms"]))]
    picked = [line for line in lines if line.startswith("Gradient packs: picked ")]
    assert len(picked) == 1 and picked[0].startswith(
        f"Gradient packs: picked {pack_tuning.size_text(pick)}: "), picked
    assert exchange.gradient_pack_bytes == pack_tuning.pack_bytes(pick)


def test_a_resume_trains_on_the_recorded_pick_without_timing(auto_run, tmp_path):
    """The record's pick, set here to 1 MB whatever was timed, is the one the
    resumed run uses; its warm-up (1 step) could not time 3 sizes."""
    train_dir = str(tmp_path / "run")
    shutil.copytree(auto_run[0], train_dir)
    record = run_record.read(train_dir)
    record[run_record.PACK_PICK] = dict(record[run_record.PACK_PICK], pack_mb=1.0)
    run_record.write(train_dir, record)
    lines, _, exchange = _train(_params(gradient_pack_mb="auto", train_dir=train_dir,
                                        num_batches=4))
    text = "\n".join(lines)
    assert ("Gradient packs: auto: 1 MB: 5 packs (of at most 1.0 MB, reverse layer order): "
            "float32 844.5 KB, 844.5 KB, 844.5 KB, 844.5 KB, 844.5 KB (the run record's pick, "
            "kept at the resume: not timed again)") in text, text
    assert "Gradient packs: picked" not in text
    assert exchange.gradient_pack_bytes == 10**6
    assert run_record.read(train_dir)[run_record.PACK_PICK]["pack_mb"] == 1.0
