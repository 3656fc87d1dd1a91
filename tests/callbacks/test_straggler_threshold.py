"""--straggler_threshold: how late, as a share of the step, a worker must
reach the exchange to be named (tests/cluster/test_straggler_report.py runs
the report under the launcher at the default; here its boundary)."""
import types

import numpy as np
import pytest

from towertrain.callbacks.straggler_report import StragglerReport
from towertrain.config.cluster_spec import Cluster
from towertrain.engine.step.step_outputs import WORKER_TIMING

CLUSTER = Cluster(workers=("a:1", "b:2", "c:3"))


def _window(report, late, steps=10, step_seconds=0.1):
    """`steps` steps of 100 ms in which task 1 reaches the exchange `late`
    seconds after the others, waiting no longer on its input."""
    for step in range(1, steps + 1):
        reach = [0.05, 0.05 + late, 0.05]
        wait = [0.01, 0.01, 0.01]
        timing = np.array([v for pair in zip(reach, wait) for v in pair])
        report.after_step(step, types.SimpleNamespace(extras={WORKER_TIMING: timing}),
                          step_seconds)


@pytest.mark.parametrize("straggler_threshold, named", [
    (0.29, True),   # 30 ms late is more than 0.29 of a 100 ms step
    (0.31, False),  # and less than 0.31 of it
])
def test_a_worker_is_named_only_past_the_threshold(straggler_threshold, named):
    lines = []
    report = StragglerReport(CLUSTER, 10, straggler_threshold, lines.append)
    _window(report, late=0.03)
    assert report.reports == [(1, 10, 1, "compute") if named else (1, 10, None, None)]
    if named:
        assert lines == ["Straggler: worker task 1 (b:2) reached the exchange 30.0 ms after "
                         "the others' median in steps 1-10 (median step 100.0 ms): slow "
                         "compute (computed 70.0 ms, the others' median 40.0 ms)"]
    else:
        assert lines == []
    assert report.header_info() == [("Stragglers", (
        f"named every 10 steps when a worker reaches the exchange later than the others' "
        f"median by more than {straggler_threshold:g} of the step (--straggler_threshold)"))]


def test_each_window_hands_every_task_its_medians_in_ms_at_the_window_end():
    windows = []
    report = StragglerReport(CLUSTER, 5, 0.2, lambda line: None,
                             on_window=lambda step, scalars: windows.append((step, scalars)))
    rng = np.random.default_rng(3)
    timings = rng.uniform(0.001, 0.05, size=(10, 3, 2))  # step, task, (reach, wait)
    timings[..., 0] += timings[..., 1]  # a worker reaches the exchange after its input
    for step, pairs in enumerate(timings, 1):
        report.after_step(step, types.SimpleNamespace(
            extras={WORKER_TIMING: pairs.reshape(-1)}), 0.1)
    assert [step for step, _ in windows] == [5, 10]
    for (_, scalars), rows in zip(windows, (timings[:5], timings[5:])):
        expected = {}
        for task in range(3):
            expected[f"stragglers/reach_exchange_ms/task_{task}"] = \
                np.median(rows[:, task, 0]) * 1e3
            expected[f"stragglers/input_wait_ms/task_{task}"] = np.median(rows[:, task, 1]) * 1e3
        assert scalars.keys() == expected.keys()
        np.testing.assert_allclose([scalars[k] for k in expected], list(expected.values()),
                                   rtol=1e-12)
