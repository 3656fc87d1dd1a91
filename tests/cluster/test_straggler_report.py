"""The straggler report names the worker that holds the others back and the
kind of delay: one of 3 launched workers sleeps 30 ms a step in its input in
steps 101-200, in its towers in steps 201-300
(tests/helpers/straggler_worker.py). Each 10-step window of the 100 clean
steps names no one; at least 9 of the 10 windows of each slow phase name
that task and that kind."""
import re
import sys

from helpers import cluster_runs as runs

LAUNCH = [sys.executable, "-m", "towertrain.launch"]
REPORT = re.compile(r"^\[task 0\] Straggler: worker task (\d) \(127\.0\.0\.1:\d+\) reached the "
                    r"exchange [\d.]+ ms after the others' median in steps (\d+)-(\d+) "
                    r"\(median step [\d.]+ ms\): slow (input|compute) \(.*\)$", re.M)


def test_the_report_names_the_slow_task_and_its_kind_and_no_one_on_clean_steps(tmp_path):
    flags = ["--model=trivial", "--device=cpu", "--batch_size=4", "--num_batches=300",
             "--num_warmup_batches=0", "--display_every=10"]
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
