"""The straggler report names the worker that holds the others back and the
kind of delay: one of 3 launched workers sleeps 30 ms a step in its input in
steps 101-200, in its towers in steps 201-300
(tests/helpers/straggler_worker.py). Each 10-step window of the 100 clean
steps names no one; at least 9 of the 10 windows of each slow phase name
that task and that kind. With --summary_verbosity=1 the chief's event files
hold every task's window medians, where the injected sleep shows."""
import glob
import os
import re
import sys

import tensorflow as tf

from helpers import cluster_runs as runs

LAUNCH = [sys.executable, "-m", "towertrain.launch"]
REPORT = re.compile(r"^\[task 0\] Straggler: worker task (\d) \(127\.0\.0\.1:\d+\) reached the "
                    r"exchange [\d.]+ ms after the others' median in steps (\d+)-(\d+) "
                    r"\(median step [\d.]+ ms\): slow (input|compute) \(.*\)$", re.M)


def _scalars(directory):
    """tag -> {step: value} of the event files in `directory`."""
    tags = {}
    for path in glob.glob(os.path.join(directory, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                tags.setdefault(value.tag, {})[event.step] = float(tf.make_ndarray(value.tensor))
    return tags


def test_the_report_names_the_slow_task_and_its_kind_and_no_one_on_clean_steps(tmp_path):
    train_dir = str(tmp_path / "train")
    flags = ["--model=trivial", "--device=cpu", "--batch_size=4", "--num_batches=300",
             "--num_warmup_batches=0", "--display_every=10", f"--train_dir={train_dir}",
             "--summary_verbosity=1"]
    env = runs.env(STRAGGLER_TASK="2", STRAGGLER_SECONDS="0.03",
                   STRAGGLER_PHASES="input:101:200,compute:201:300")
    env.pop("TF_DETERMINISTIC_OPS")  # it refuses the step's timestamps
    with runs.Processes(str(tmp_path)) as procs:
        procs.start([*LAUNCH, "--num_workers=3", "--module=helpers.straggler_worker", "--",
                     *flags], "launcher", env)
        assert procs.wait(timeout=240) == [0], procs.log(0)[-3000:]
        log = procs.log(0)
    assert ("[task 0] Stragglers:  named every 10 steps when a worker reaches the exchange "
            "later than the others' median by more than 0.2 of the step "
            "(--straggler_threshold)") in log, log[-3000:]
    reports = [(int(task), int(first), int(last), what)
               for task, first, last, what in REPORT.findall(log)]
    assert not [r for r in reports if r[2] <= 100], reports  # the clean steps: no one
    assert len(reports) == len(set(r[1] for r in reports))  # one line a window at most
    for kind, first, last in (("input", 101, 200), ("compute", 201, 300)):
        named = [r for r in reports if first <= r[1] and r[2] <= last]
        assert len([r for r in named if r[0] == 2 and r[3] == kind]) >= 9, (kind, reports)
    _check_summaries(_scalars(train_dir))


def _check_summaries(tags):
    """Every task's medians at each window's end; the sleeping task's 30 ms in
    its input wait in the input phase, in its reach alone in the compute phase."""
    windows = list(range(10, 301, 10))
    for task in range(3):
        for kind in ("reach_exchange_ms", "input_wait_ms"):
            tag = f"stragglers/{kind}/task_{task}"
            assert sorted(tags.get(tag, {})) == windows, (tag, sorted(tags))
    reach = {k: tags[f"stragglers/reach_exchange_ms/task_{k}"] for k in range(3)}
    wait = {k: tags[f"stragglers/input_wait_ms/task_{k}"] for k in range(3)}
    for step in windows:
        for k in range(3):
            assert reach[k][step] >= wait[k][step] >= 0, (step, k)
    slow_input = [s for s in windows if 110 <= s <= 200
                  and wait[2][s] - max(wait[0][s], wait[1][s]) >= 20]
    slow_compute = [s for s in windows if 210 <= s <= 300
                    and (reach[2][s] - wait[2][s]) - max(reach[k][s] - wait[k][s]
                                                         for k in (0, 1)) >= 20]
    assert len(slow_input) >= 9 and len(slow_compute) >= 9, (slow_input, slow_compute)
