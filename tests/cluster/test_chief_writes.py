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


@pytest.mark.slow
def test_only_the_chief_prints_the_output_and_writes_the_train_dir(tmp_path):
    """Each worker is given its own --train_dir (a fresh run: nothing to resume),
    so whatever the non-chief writes would land in its own. Its stdout is one
    line; its train_dir has no file, the chief's has the run's checkpoints."""
    hosts = ",".join(f"127.0.0.1:{port}" for port in free_ports(2))
    train_dirs = [str(tmp_path / f"train{task}") for task in range(2)]
    outs = [tmp_path / f"task{task}.out" for task in range(2)]
    procs = []
    try:
        for task in range(2):
            with open(outs[task], "w") as out, open(tmp_path / f"task{task}.err", "w") as err:
                procs.append(subprocess.Popen(runs.towertrain(
                    "--model=trivial", "--device=cpu", "--num_gpus=1", "--batch_size=4",
                    f"--num_batches={STEPS}", "--num_warmup_batches=0", "--display_every=1",
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
    chief, worker = (out.read_text() for out in outs)
    errors = "".join((tmp_path / f"task{task}.err").read_text()[-2000:] for task in range(2))
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
