"""tf_cnn_benchmarks-style numbers: speed statistics and excluded pauses."""
import pytest

from towertrain import benchmark_log


def test_speed_stats_mean_uncertainty_and_jitter():
    mean, uncertainty, jitter = benchmark_log.speed_stats(100, [1.0, 0.5, 0.5, 0.25])
    assert mean == pytest.approx((100 + 200 + 200 + 400) / 4)
    assert uncertainty == pytest.approx(125.8306 / 2, rel=1e-5)  # stdev / sqrt(n)
    assert jitter == pytest.approx(1.4826 * 50)  # 1.4826 x median |speed - median|


def test_a_pause_between_steps_is_left_out_of_step_times_and_total(monkeypatch):
    clock = iter([0.0, 1.0, 11.0, 12.0])  # start, step 1, (eval/save until 11), step 2
    monkeypatch.setattr(benchmark_log.time, "perf_counter", lambda: next(clock))
    lines = []
    logger = benchmark_log.StepLogger(images_per_step=64, display_every=1, write=lines.append)
    logger.start()
    logger.step_done(2.0)
    logger.exclude_pause()
    logger.step_done(1.5)
    assert logger.step_times == [1.0, 1.0]
    assert logger.total_images_per_sec() == pytest.approx(64.0)
    assert lines[-1] == "2\timages/sec: 64.0 +/- 0.0 (jitter = 0.0)\t1.500"
