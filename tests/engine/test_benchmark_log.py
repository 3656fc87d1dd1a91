"""tf_cnn_benchmarks-style numbers: speed statistics, real example counts."""
import pytest

from towertrain.engine.run import benchmark_log


def test_speed_stats_mean_uncertainty_and_jitter():
    mean, uncertainty, jitter = benchmark_log.speed_stats([100, 200, 200, 400])
    assert mean == pytest.approx((100 + 200 + 200 + 400) / 4)
    assert uncertainty == pytest.approx(125.8306 / 2, rel=1e-5)  # stdev / sqrt(n)
    assert jitter == pytest.approx(1.4826 * 50)  # 1.4826 x median |speed - median|


def test_partial_batch_counts_its_own_examples():
    times = benchmark_log.StepTimes()
    times.add(64, 1.0)
    times.add(16, 0.5)  # the last, partial batch of an epoch
    assert times.total_images_per_sec() == pytest.approx(80 / 1.5)
    assert times.step_line(7, 1.5) == "7\timages/sec: 48.0 +/- 16.0 (jitter = 23.7)\t1.500"
