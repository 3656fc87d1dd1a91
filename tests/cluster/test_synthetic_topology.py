"""Synthetic data and dropout on 2 workers x 1 device train what 1 process x 2
devices trains, from the first step: each tower's synthetic batch is a
function of the seed and its global tower index, and its dropout masks of
(seed, step, tower). (On files the same holds: tests/cluster/test_topology_change.py.)"""
import pytest

from helpers import cluster_runs as runs
from helpers.ports import free_ports


def _flags(train_dir, workers, devices):
    return ["--model=cifar_cnn", "--device=cpu", "--num_batches=3", "--num_warmup_batches=0",
            "--optimizer=momentum", "--init_learning_rate=0.01", f"--train_dir={train_dir}",
            "--collective_timeout_secs=20", *runs.topology(workers, devices)]


@pytest.mark.slow  # three processes, started together
def test_two_workers_on_synthetic_data_equal_one_process_with_two_devices(tmp_path):
    two, one = str(tmp_path / "two_workers"), str(tmp_path / "one_process")
    hosts = ",".join(f"127.0.0.1:{port}" for port in free_ports(2))
    with runs.Processes(str(tmp_path)) as procs:
        for task in range(2):
            procs.start(runs.towertrain(*_flags(two, 2, 1), f"--worker_hosts={hosts}",
                                        f"--task_index={task}"), f"task{task}")
        # Default threads: 1 x 2 and 2 x 1 get the same share of the cores (cores /
        # towers x workers on the host), so the convolutions sum in the same order.
        procs.start(runs.towertrain(*_flags(one, 1, 2)), "single")
        statuses = procs.wait(timeout=240)
        assert statuses == [0, 0, 0], "\n".join(procs.log(i)[-1500:] for i in range(3))
    assert runs.checkpoint_steps(two)[-1] == runs.checkpoint_steps(one)[-1] == 3
    runs.assert_same_model(two, one)
