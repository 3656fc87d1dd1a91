"""Worker 0 is the chief: it prints the output and writes checkpoints; the
other workers print one line and write nothing."""
import os
import re
import signal
import subprocess

import pytest

from helpers import cluster_runs as runs
from helpers.ports import free_ports

STEPS = 8


def _files(directory):
    return sorted(os.path.relpath(os.path.join(root, name), directory)
                  for root, _, names in os.walk(directory) for name in names)


def _run_workers(tmp_path, train_dirs, steps, name):
    """Two workers, task k on train_dirs[k]; returns (statuses, stdouts, stderrs)."""
    hosts = ",".join(f"127.0.0.1:{port}" for port in free_ports(2))
    outs = [tmp_path / f"{name}{task}.out" for task in range(2)]
    procs = []
    try:
        for task in range(2):
            with open(outs[task], "w") as out, open(tmp_path / f"{name}{task}.err", "w") as err:
                procs.append(subprocess.Popen(runs.towertrain(
                    "--model=trivial", "--device=cpu", "--num_gpus=1", "--batch_size=4",
                    f"--num_batches={steps}", "--num_warmup_batches=0", "--display_every=1",
                    "--save_model_steps=4", "--variable_update=collective_all_reduce",
                    "--collective_timeout_secs=20", f"--worker_hosts={hosts}",
                    f"--task_index={task}", f"--train_dir={train_dirs[task]}"),
                    cwd=runs.REPO, env=runs.env(), stdout=out, stderr=err,
                    start_new_session=True))
        statuses = [proc.wait(timeout=240) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)
    return statuses, [out.read_text() for out in outs], [
        (tmp_path / f"{name}{task}.err").read_text() for task in range(2)], hosts


@pytest.mark.slow
def test_only_the_chief_prints_the_output_and_writes_the_train_dir(tmp_path):
    """Each worker is given its own --train_dir (a fresh run: nothing to resume),
    so whatever the non-chief writes would land in its own. Its stdout is one
    line; its train_dir has no file, the chief's has the run's checkpoints.
    Extended by the same commands, each worker on its own folder again, the
    chief's holding ckpt-8 now: both refuse before any step, with one line."""
    train_dirs = [str(tmp_path / f"train{task}") for task in range(2)]
    statuses, (chief, worker), errs, hosts = _run_workers(tmp_path, train_dirs, STEPS, "task")
    errors = "".join(err[-2000:] for err in errs)
    assert statuses == [0, 0], chief[-2000:] + worker[-2000:] + errors
    # The chief: the header, every step, its checkpoints.
    assert re.search(r"^Cluster: +2 workers x 1 device, task 0 of 2 \(chief\)", chief, re.M)
    assert runs.last_step_printed(chief) == STEPS, chief[-2000:]
    assert runs.checkpoint_steps(train_dirs[0]) == [4, STEPS]
    # The non-chief: one line, no file.
    assert worker.splitlines() == [
        f"worker task 1 of 2 at {hosts.split(',')[1]}, from --worker_hosts/--task_index: "
        "training; the chief (task 0) writes the output and checkpoints"], worker
    assert _files(train_dirs[1]) == [], _files(train_dirs[1])
    # The rerun to 12 steps: the chief would resume at 8, the worker at 0.
    statuses, outs, errs, _ = _run_workers(tmp_path, train_dirs, 12, "again")
    line = (f"towertrain: error: --train_dir={train_dirs[0]}: the workers would resume from "
            "different checkpoints (task 0: ckpt-8; task 1: no checkpoint in its --train_dir); "
            "give every worker the same --train_dir, one folder they all reach (a shared file "
            "system), so they all resume from the chief's checkpoint (nothing was trained)")
    assert statuses == [2, 2], "".join(outs + errs)
    assert errs[0].splitlines() == [line], errs[0]
    assert errs[1].splitlines() == [line.replace(train_dirs[0], train_dirs[1])], errs[1]
    assert runs.checkpoint_steps(train_dirs[0]) == [4, STEPS]
    assert _files(train_dirs[1]) == [], _files(train_dirs[1])
