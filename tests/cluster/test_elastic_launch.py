"""The elastic launch keeps the run exact while workers come and go: 4
launched workers x 1 device (cifar_cnn with dropout, random crops and flips
on CIFAR-layout files, --global_batch_size=12, a checkpoint every 10 steps);
one is killed (kill -9) after step 12: the other 3 go on from the chief's
checkpoint; SIGUSR1 after step 22 takes a fourth back in at the checkpoint
the workers make together. The final weights equal a run changed by hand
4 -> 3 -> 4 workers at the same steps (so no example is repeated or skipped:
each leg resumes at the input position of its step; one process of 4
devices is not the reference: its sums in another order drift 1e-5 apart);
the changes, their steps and the recovery time are printed, in the run
record and the launcher's record."""
import json
import os
import re
import signal
import sys

import pytest

from helpers import cifar_files
from helpers import cluster_runs as runs

LAUNCH = [sys.executable, "-m", "towertrain.launch"]
STEPS = 30


def _flags(data_dir, train_dir, num_batches):
    return ["--model=cifar_cnn", "--distortions", "--device=cpu", f"--data_dir={data_dir}",
            "--num_gpus=1", "--global_batch_size=12", f"--num_batches={num_batches}",
            "--num_warmup_batches=0", "--optimizer=momentum", "--init_learning_rate=0.01",
            f"--train_dir={train_dir}", "--display_every=1", "--save_model_steps=10",
            "--max_ckpts_to_keep=20", "--collective_timeout_secs=20"]


def _chief_step(procs):
    return runs.last_step_printed("\n".join(
        line[len("[task 0] "):] for line in procs.log(0).splitlines()
        if line.startswith("[task 0] ")))


def _launch(tmp_path, name, workers, flags):
    with runs.Processes(str(tmp_path)) as procs:
        procs.start([*LAUNCH, f"--num_workers={workers}", "--", *flags], name)
        assert procs.wait(timeout=300) == [0], procs.log(0)[-3000:]


@pytest.mark.slow
def test_a_worker_lost_then_taken_back_keeps_the_run_exact(tmp_path):
    data_dir = cifar_files.write_dataset(str(tmp_path / "data"), 48, 8)
    train_dir = str(tmp_path / "elastic")
    with runs.Processes(str(tmp_path)) as procs:
        launcher = procs.start([*LAUNCH, "--num_workers=4", "--min_workers=3",
                                "--max_workers=4", "--", *_flags(data_dir, train_dir, STEPS)],
                               "elastic")
        procs.wait_for(lambda: _chief_step(procs) >= 12, 300, "step 12")
        pid = int(re.search(r"^\[launcher\] task 3: pid (\d+)", procs.log(0), re.M).group(1))
        os.kill(pid, signal.SIGKILL)
        procs.wait_for(lambda: "going on with 3 worker(s)" in procs.log(0)
                       and _chief_step(procs) >= 22
                       and procs.log(0).count("recovered in") == 1, 300, "step 22 with 3")
        os.kill(launcher.pid, signal.SIGUSR1)
        assert launcher.wait(timeout=300) == 0, procs.log(0)[-3000:]
        log = procs.log(0)
    with open(os.path.join(train_dir, "towertrain_elastic.json")) as f:
        events = json.load(f)
    assert [(e["event"], e["tasks"], e["workers_before"], e["workers_after"])
            for e in events] == [("lost", [3], 4, 3), ("taken in", [3], 3, 4)], events
    lost_at, back_at = events[0]["step"], events[1]["step"]
    assert 10 <= lost_at < back_at < STEPS, events
    assert all(e["recovery_seconds"] > 0 and e["first_step"] == e["step"] + 1 for e in events)
    assert f"[launcher] lost task(s) 3: going on with 3 worker(s) from step {lost_at}" in log
    assert re.search(r"^\[launcher\] recovered in [\d.]+ s: 3 worker\(s\) trained step "
                     rf"{lost_at + 1}$", log, re.M), log[-3000:]
    assert ("[task 0] Topology:    checkpoint written by 4 worker(s) x 1 device(s), now 3 x 1; "
            "same global batch 12: continues exactly") in log, log[-3000:]
    with open(os.path.join(train_dir, "towertrain_run.json")) as f:
        changes = json.load(f)["topology_changes"]
    assert [(c["step"], c["from"]["workers"], c["to"]["workers"], c["to"]["per_device"])
            for c in changes] == [(lost_at, 4, 3, 4), (back_at, 3, 4, 3)], changes

    # The same changes by hand, at the same steps.
    reference = str(tmp_path / "reference")
    for name, workers, until in (("ref4", 4, lost_at), ("ref3", 3, back_at),
                                 ("ref4b", 4, STEPS)):
        _launch(tmp_path, name, workers, _flags(data_dir, reference, until))
    runs.assert_same_model(train_dir, reference, tolerance=1e-5)


@pytest.mark.parametrize("options,flags,message", [
    (["--num_workers=2", "--min_workers=2"], ["--global_batch_size=8"],
     "--min_workers=2: an elastic run goes on from the chief's checkpoint; give the workers "
     "a --train_dir"),
    (["--num_workers=2", "--min_workers=2"], ["--train_dir=run"],
     "--min_workers=2: an elastic run keeps the global batch when the workers change; give "
     "the workers --global_batch_size"),
    (["--num_workers=2", "--min_workers=3"], ["--train_dir=run", "--global_batch_size=8"],
     "--min_workers=3: needs 1 <= --min_workers <= --num_workers=2 <= --max_workers=2"),
    (["--num_workers=2", "--max_workers=3"], [], "--max_workers=3: needs --min_workers"),
    (["--num_workers=2", "--min_workers=1", "--max_restarts=1"], [],
     "--max_restarts=1: not with --min_workers, which goes on with the workers left "
     "instead of restarting them all"),
])
def test_an_elastic_launch_that_cannot_keep_the_run_is_refused(tmp_path, options, flags,
                                                               message):
    import subprocess
    done = subprocess.run([*LAUNCH, *options, "--", *flags], env=runs.env(), cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"towertrain.launch: error: {message}\n")


def test_a_worker_count_the_global_batch_cannot_be_cut_over_is_refused_with_the_reason():
    from towertrain.commands import launch
    flags = ["--global_batch_size=12", "--num_gpus", "1", "--train_dir=run"]
    assert launch.global_batch_refusal(flags, 3) is None
    assert launch.global_batch_refusal(flags, 4) is None
    assert launch.global_batch_refusal(flags, 5) == (
        "--global_batch_size=12: does not divide over 5 workers x 1 device (5); use a global "
        "batch that is a multiple of 5, or give --batch_size to accumulate the rest")
