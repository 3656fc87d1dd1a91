"""When the step watchdog fires on a hung step of a multi-worker run, its
line names the tasks that never reached the step's exchange: 2 workers x 1
device, worker task 1 sleeping in its towers from step 7 on
(tests/helpers/straggler_worker.py). Worker task 0 waits in the exchange;
past its --step_timeout_secs=6 its watch names task 1 and exits with status
1. Task 1's limit is 8 s: it leaves its mark at half of that, before task 0
fires, and exits only after (with equal limits the one that exits first
decides whether the other reports a hung step or a lost peer, which names
it too). A clean run with a 6 s limit names no one and ends with status 0.
(tests/callbacks/test_hung_exchange_marks.py checks the line's every case.)"""
import os
import re
import sys

import pytest

from helpers import cluster_runs as runs
from helpers.ports import free_ports

FLAGS = ["--model=trivial", "--device=cpu", "--num_gpus=1", "--batch_size=4",
         "--num_warmup_batches=0", "--display_every=1",
         "--variable_update=collective_all_reduce", "--collective_timeout_secs=30"]


def _run(tmp_path, flags, limits=(6, 6), **hook):
    """Both workers' (exit status, output) for a run with `flags`, each
    worker's --step_timeout_secs from `limits`."""
    hosts = ",".join(f"127.0.0.1:{port}" for port in free_ports(2))
    tmp_path.mkdir()
    with runs.Processes(str(tmp_path)) as procs:
        for task in range(2):
            procs.start([sys.executable, "-m", "helpers.straggler_worker", *FLAGS, *flags,
                         f"--step_timeout_secs={limits[task]}", f"--worker_hosts={hosts}",
                         f"--task_index={task}"], f"task{task}", runs.env(**hook))
        statuses = procs.wait(timeout=120)
        return list(zip(statuses, (procs.log(0), procs.log(1))))


@pytest.mark.slow
def test_the_watchdog_names_the_worker_that_never_reached_the_exchange(tmp_path):
    train_dir = tmp_path / "run"  # where the marks are (without one: a temp folder)
    (status, chief), (hung_status, _) = _run(
        tmp_path / "hung", ["--num_batches=20", f"--train_dir={train_dir}"], limits=(6, 8),
        STRAGGLER_TASK="1", STRAGGLER_SECONDS="600", STRAGGLER_PHASES="compute:7:7")
    assert (status, hung_status) == (1, 1), chief[-3000:]
    line = [t for t in chief.splitlines() if t.startswith("towertrain: error: step 7 ")]
    assert len(line) == 1, chief[-3000:]
    assert re.fullmatch(
        r"towertrain: error: step 7 has run \d+ s, past --step_timeout_secs=6, last in the "
        r"step function's gradient exchange \(.*\); worker task 1 \(127\.0\.0\.1:\d+\) never "
        r"reached the exchange of step 7 \(last in its towers\): a hung collective, peer or "
        r"kernel; .*", line[0]), line[0]
    assert re.search(r"^6\t", chief, re.M) and not re.search(r"^7\t", chief, re.M)
    assert sorted(os.listdir(train_dir / "step_marks")) == ["task-0.json", "task-1.json"]

    clean = _run(tmp_path / "clean", ["--num_batches=10"])
    assert [status for status, _ in clean] == [0, 0], clean[0][1][-3000:]
    assert runs.last_step_printed(clean[0][1]) == 10
    for _, out in clean:
        assert "never reached" not in out and "towertrain: error" not in out, out[-3000:]
