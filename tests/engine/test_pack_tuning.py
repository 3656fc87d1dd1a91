"""--gradient_pack_mb=auto (towertrain/engine/run/pack_tuning.py): which sizes
are timed, how the pick is made (largest packs first, while each gains on
the one before it, by each candidate's slowest worker), and, on 2 CPU devices, that an auto run trains to the bits of a run
on any fixed candidate, says its pick in the header and the run record, and
that a resume trains on the recorded pick without timing again. The 2-worker
decision is tests/engine/test_pack_tuning_workers.py's."""
import shutil

import numpy as np
import pytest
import tensorflow as tf

import helpers.tiny_models  # noqa: F401 - registers tiny_wide (4.2 MB of gradients)
from helpers import cifar_files
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


def _tuning(monkeypatch, durations, other_worker=None, variables=WIDE):
    """A PackTuning of `variables` whose steps take `durations` (seconds) here
    and whose other worker's fastest steps are `other_worker` (None: one
    process)."""
    clock = _Clock(durations)
    monkeypatch.setattr(pack_tuning.time, "perf_counter", clock)
    installed, sites = [], []

    def cluster_max(values, site):
        sites.append((site, list(values)))
        return [max(a, b) for a, b in zip(values, other_worker or values)]
    tuning = pack_tuning.PackTuning(variables, installed.append, cluster_max)
    return tuning, clock, installed, sites


def test_the_candidates_run_in_turn_while_each_gains_on_the_one_before(monkeypatch):
    """3 candidates x 2 steps in a row: each one's first step builds (untimed,
    whatever it takes), the second is timed; 4 MB's 2.5 s gains on one
    pack's 3 s, 1 MB's 2 s on 4 MB's: 1 MB is the pick."""
    tuning, clock, installed, sites = _tuning(monkeypatch, [0.5, 3, 9, 2.5, 9, 2])
    lines, entries = [], []
    tuning.start(1, 6, write=lines.append, on_pick=entries.append)
    assert tuning.tuning and tuning.steps_each == 2
    results = [tuning.run_step(clock.step) for _ in range(6)]
    assert results == ["result"] * 6 and not tuning.tuning
    assert installed == [None, None, 4 * 10**6, 4 * 10**6, 10**6, 10**6, 10**6]
    assert sites == [("pack_timings", [3, 2.5]), ("pack_timings", [2.5, 2])]
    assert tuning.pick == 1.0
    assert lines == ["Gradient packs: picked 1 MB: 5 packs (of at most 1.0 MB, reverse layer "
                     "order): float32 844.5 KB, 844.5 KB, 844.5 KB, 844.5 KB, 844.5 KB (timed "
                     "in warm-up steps 1..6, the fastest of 1 step each: one pack per dtype "
                     "3000.0 ms, 4 MB 2500.0 ms, 1 MB 2000.0 ms)"]
    assert entries == [{"pack_mb": 1.0, "candidates_mb": [0.0, 4.0, 1.0],
                        "step_ms": [3000.0, 2500.0, 2000.0]}]


def test_the_first_size_without_a_gain_ends_the_timing_unbuilt_sizes_left(monkeypatch):
    """4 MB (3 s) gains nothing on one pack (3 s): one pack is the pick at
    step 4, 1 MB is never built, and warm-up steps 5-6 train on one pack."""
    tuning, clock, installed, sites = _tuning(monkeypatch, [9, 3, 9, 3, 1, 1])
    lines, entries = [], []
    tuning.start(1, 6, write=lines.append, on_pick=entries.append)
    for _ in range(4):
        tuning.run_step(clock.step)
    assert not tuning.tuning and tuning.pick == 0.0
    assert installed == [None, None, 4 * 10**6, 4 * 10**6, None]
    assert sites == [("pack_timings", [3, 3])]
    assert lines == ["Gradient packs: picked one pack per dtype: 1 pack (one per dtype): "
                     "float32 4.2 MB (timed in warm-up steps 1..4, the fastest of 1 step "
                     "each: one pack per dtype 3000.0 ms, 4 MB 3000.0 ms; 4 MB not more "
                     "than 3% faster: 1 MB not timed)"]
    assert entries == [{"pack_mb": 0.0, "candidates_mb": [0.0, 4.0],
                        "step_ms": [3000.0, 3000.0]}]


def test_a_later_size_that_stops_gaining_leaves_the_one_before_it(monkeypatch):
    """Of 4 candidates the second-fastest is neither first nor last: 16 MB
    gains on one pack, 4 MB not on 16 MB (2.0 against 2.05: within 3%)."""
    tuning, clock, installed, sites = _tuning(monkeypatch, [9, 3, 9, 2.05, 9, 2.0, 9, 1],
                                              variables=[tf.TensorSpec([5_000_000])])
    tuning.start(1, 8)
    for _ in range(6):
        tuning.run_step(clock.step)
    assert not tuning.tuning and tuning.pick == 16.0 and installed[-1] == 16 * 10**6
    assert tuning.times == pytest.approx([3, 2.05, 2.0])
    assert 10**6 not in installed


def test_each_comparison_takes_both_candidates_slowest_worker(monkeypatch):
    """Here 4 MB is this worker's fastest (1 s), but the other worker takes 5
    s on it: the step waits for the slowest, so 4 MB (max 5 s) gains nothing
    on one pack (max 3 s) on every worker. The fastest of a candidate's timed
    steps counts (4 steps each: 3 timed)."""
    tuning, clock, _, sites = _tuning(
        monkeypatch, [9, 3, 4, 3] + [9, 1, 2, 2] + [9, 9, 9, 9], other_worker=[1, 5])
    tuning.start(11, 12)
    assert tuning.steps_each == 4
    for _ in range(7):
        tuning.run_step(clock.step)
    assert tuning.tuning and not sites  # 4 MB's last step is the 8th
    tuning.run_step(clock.step)
    assert not tuning.tuning
    assert sites == [("pack_timings", [3, 1])]
    assert tuning.times == [3, 5] and tuning.pick == 0.0


@pytest.mark.parametrize("challenger,incumbent,gains", [
    (1.0, 2.0, True),
    (1.0, 1.029, False),    # just inside the margin: the larger packs
    (1.0, 1.03, False),     # at the margin
    (1.0, 1.031, True),     # just outside: the gain is more than noise
    (1.0, 1.0, False),      # a tie: the larger packs
    (2.0, 1.0, False),
])
def test_a_smaller_size_replaces_the_larger_only_for_a_gain_above_the_margin(
        challenger, incumbent, gains):
    assert pack_tuning.PICK_MARGIN == 0.03
    assert pack_tuning.beats(challenger, incumbent) == gains


def test_warm_up_steps_left_over_train_on_the_pick(monkeypatch):
    """7 warm-up steps for 3 candidates: 2 each, the 7th already on the pick."""
    tuning, clock, installed, _ = _tuning(monkeypatch, [9, 1, 9, 2, 9])
    tuning.start(1, 7)
    assert tuning.steps_each == 2
    for _ in range(4):
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
    run, which trained on each size it timed, ends where each fixed size does."""
    _, _, copies, _ = auto_run
    for mb in (0.0, 4.0, 1.0):
        _, fixed, _ = _train(_params(gradient_pack_mb=mb))
        for got, want in zip(copies, fixed):
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)


def test_with_dropout_batch_norm_and_distortions_auto_trains_to_the_bits_of_each_size(
        tmp_path):
    """The same with randomness in the step and the input: dropout's draws
    and the batch-norm statistics follow the step, not the packs, and the
    distortions are the input's (CIFAR-layout files, random crops and flips)."""
    data_dir = cifar_files.write_dataset(str(tmp_path / "data"), 48, 8)
    random = dict(model="tiny_wide_random", data_dir=data_dir, distortions=True)
    lines, copies, _ = _train(_params(gradient_pack_mb="auto", **random))
    assert "Gradient packs: auto: timing up to 3 sizes" in "\n".join(lines), lines
    assert any(line.startswith("Gradient packs: picked ") for line in lines), lines
    for mb in (0.0, 4.0, 1.0):
        _, fixed, _ = _train(_params(gradient_pack_mb=mb, **random))
        for got, want in zip(copies, fixed):
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)


def test_the_header_the_pick_line_and_the_run_record_name_the_pick(auto_run):
    train_dir, lines, _, exchange = auto_run
    text = "\n".join(lines)
    assert ("Gradient packs: auto: timing up to 3 sizes, largest packs first, in warm-up "
            "steps 1..6 at most, 2 steps each, until one is not more than 3% faster than the "
            "one before: one pack per dtype, 4 MB, 1 MB") in text, text
    entry = run_record.read(train_dir)[run_record.PACK_PICK]
    timed, ms = entry["candidates_mb"], entry["step_ms"]
    assert timed == [0.0, 4.0, 1.0][:len(timed)] and len(ms) == len(timed) >= 2
    # The descent's pick from the recorded times: the last size that was
    # more than 3% faster than the one before it.
    gains = [ms[i] * 1.03 < ms[i - 1] for i in range(1, len(ms))]
    assert gains[:-1] == [True] * (len(gains) - 1), entry  # it stopped at the first non-gain
    pick = entry["pack_mb"]
    assert pick == timed[-1 if gains[-1] else -2], entry
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
