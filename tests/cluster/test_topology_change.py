"""A checkpoint of W workers x L devices continues on W' x L' with the same
global batch: 2 x 1 -> 1 x 2 -> 2 x 1, each leg killed at a checkpoint but
the last, ends on the uninterrupted 1 x 2 run's weights with its epochs
exact, dropout and random crops included (the shared run: cifar_cnn with
--distortions, tests/helpers/cluster_runs.py). A changed global batch is said
at the resume."""
import os
import signal

import pytest

from helpers import cluster_runs as runs
from helpers.cli import quiet
from helpers.ports import free_ports

EPOCHS = runs.EPOCHS  # 6 steps each


def _start(procs, flags, workers, name):
    if workers == 1:
        procs.start(runs.towertrain(*flags), f"{name}_single")
        return
    hosts = ",".join(f"127.0.0.1:{port}" for port in free_ports(workers))
    for task in range(workers):
        procs.start(runs.towertrain(*flags, f"--worker_hosts={hosts}", f"--task_index={task}"),
                    f"{name}_task{task}")


def _run(tmp_path, data_dir, train_dir, workers, devices, name, kill_after=None):
    """Runs `workers` x `devices` from train_dir's latest checkpoint; with
    kill_after, SIGKILLs every process once a checkpoint past that step exists.
    Returns the chief's log."""
    flags = runs.run_flags(data_dir, train_dir, EPOCHS, *runs.topology(workers, devices),
                           "--save_model_steps=6", "--max_ckpts_to_keep=20")
    with runs.Processes(str(tmp_path)) as procs:
        _start(procs, flags, workers, name)
        if kill_after is None:
            assert procs.wait(timeout=240) == [0] * workers, procs.log(0)[-3000:]
        else:
            procs.wait_for(lambda: any(s > kill_after for s in runs.checkpoint_steps(train_dir)),
                           240, f"a checkpoint after step {kill_after}")
            for proc in procs.procs:
                os.killpg(proc.pid, signal.SIGKILL)
            procs.wait(timeout=30)
        return procs.log(0)


@pytest.mark.slow
def test_two_workers_to_one_process_and_back_continues_exactly(tmp_path, tmp_path_factory):
    data_dir, reference = runs.data_and_reference(tmp_path_factory)
    train_dir = str(tmp_path / "train")
    _run(tmp_path, data_dir, train_dir, 2, 1, "run1", kill_after=0)
    first = runs.checkpoint_steps(train_dir)[-1]
    assert 0 < first < 6 * EPOCHS, "the run finished before the kill"
    # 2 x 1 equals 1 x 2 from the first step on (dropout masks, crops, flips).
    runs.assert_same_model(train_dir, reference, step=first)
    log = _run(tmp_path, data_dir, train_dir, 1, 2, "run2", kill_after=first)
    assert f"from step {first}" in log, log[:3000]
    assert ("checkpoint written by 2 worker(s) x 1 device(s), now 1 x 2; same global batch "
            "8: continues exactly") in log, log[:3000]
    second = runs.checkpoint_steps(train_dir)[-1]
    assert first < second < 6 * EPOCHS, "the run finished before the kill"
    log = _run(tmp_path, data_dir, train_dir, 2, 1, "run3")
    assert f"from step {second}" in log, log[:3000]
    assert "written by 1 worker(s) x 2 device(s), now 2 x 1; same global batch" in log
    assert runs.checkpoint_steps(train_dir)[-1] == 6 * EPOCHS  # epochs exact
    runs.assert_same_model(train_dir, reference)


def test_a_changed_global_batch_is_said_at_the_resume(tmp_path_factory, tmp_path):
    from towertrain import Params, Trainer
    data_dir, _ = runs.data_and_reference(tmp_path_factory)
    lines = []

    def train(batch_size, write):
        trainer = Trainer(Params(model="trivial", device="cpu", num_gpus=2,
                                 batch_size=batch_size, data_dir=data_dir, num_epochs=2,
                                 num_warmup_batches=0, train_dir=str(tmp_path / "train")))
        try:
            trainer.train(write=write)
        finally:
            trainer.close()

    train(4, quiet)
    train(4, lines.append)  # same batch, same topology: nothing to say
    assert not [line for line in lines if "Topology" in line or "Global batch" in line]
    train(8, lines.append)
    header = "\n".join(lines)
    assert "checkpoint written by 1 worker(s) x 2 device(s), now 1 x 2" in header, header
    assert "CHANGED at resume: 8 in the checkpoint, now 16" in header, header
