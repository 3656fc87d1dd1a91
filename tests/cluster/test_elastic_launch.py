"""The elastic launch keeps the run exact while workers come and go: 4
launched workers x 1 device (cifar_cnn with dropout, random crops and flips
on CIFAR-layout files, --global_batch_size=12, a checkpoint every 10 steps);
one is killed (kill -9) at step 25: the other 3 go on from the step the
chief saved when it lost it (a batch staged past it is read again); SIGUSR1
to the launcher then takes a fourth back in at the next periodic
checkpoint, where the 3 stop together. One launch serves every assertion (a
module fixture): the changes, their steps and the recovery time, printed
and in the run record and the launcher's record; the final weights equal a
run changed by hand 4 -> 3 -> 4 workers at the same steps (one process of 4
devices is not the reference: its sums in another order drift 1e-5 apart);
each example decoded by the workers of the start that trained its step,
once (no example repeated or skipped); the survivors' one lines name logs
that hold TensorFlow's abort lines."""
import collections
import glob
import json
import os
import re
import signal
import sys

import pytest

from helpers import cifar_files
from helpers import cluster_runs as runs

LAUNCH = [sys.executable, "-m", "towertrain.launch"]
STEPS = 50
GLOBAL_BATCH, EXAMPLES, SAVE_STEPS = 12, 48, 10
KILLED_AT = 25


def _flags(data_dir, train_dir, num_batches):
    return ["--model=cifar_cnn", "--distortions", "--device=cpu", f"--data_dir={data_dir}",
            "--num_gpus=1", f"--global_batch_size={GLOBAL_BATCH}",
            f"--num_batches={num_batches}", "--num_warmup_batches=0", "--optimizer=momentum",
            "--init_learning_rate=0.01", f"--train_dir={train_dir}", "--display_every=1",
            f"--save_model_steps={SAVE_STEPS}", "--max_ckpts_to_keep=20",
            "--collective_timeout_secs=20"]


def _chief_step(procs):
    return runs.last_step_printed("\n".join(
        line[len("[task 0] "):] for line in procs.log(0).splitlines()
        if line.startswith("[task 0] ")))


def _launch(tmp_path, name, workers, flags):
    with runs.Processes(str(tmp_path)) as procs:
        procs.start([*LAUNCH, f"--num_workers={workers}", "--", *flags], name)
        assert procs.wait(timeout=300) == [0], procs.log(0)[-3000:]


@pytest.fixture(scope="module")
def elastic(tmp_path_factory):
    """The elastic launch: 4 workers, task 3 killed at step 25, SIGUSR1 once
    the 3 go on. Its launcher log, train_dir, data and decode records."""
    tmp_path = tmp_path_factory.mktemp("elastic")
    data_dir = cifar_files.write_dataset(str(tmp_path / "data"), EXAMPLES, 8)
    train_dir, decoded = str(tmp_path / "elastic"), tmp_path / "decoded"
    decoded.mkdir()
    with runs.Processes(str(tmp_path)) as procs:
        launcher = procs.start([*LAUNCH, "--num_workers=4", "--min_workers=3",
                                "--max_workers=4", "--module=helpers.counting_worker", "--",
                                *_flags(data_dir, train_dir, STEPS)],
                               "elastic", runs.env(COUNTING_DIR=str(decoded)))
        procs.wait_for(lambda: _chief_step(procs) >= KILLED_AT, 300, f"step {KILLED_AT}")
        pid = int(re.search(r"^\[launcher\] task 3: pid (\d+)", procs.log(0), re.M).group(1))
        os.kill(pid, signal.SIGKILL)
        procs.wait_for(lambda: "going on with 3 worker(s)" in procs.log(0), 300,
                       "the 3 survivors' start")
        # The launcher keeps it until the 3 train: the chief gets it then.
        os.kill(launcher.pid, signal.SIGUSR1)
        assert launcher.wait(timeout=300) == 0, procs.log(0)[-3000:]
        log = procs.log(0)
    with open(os.path.join(train_dir, "towertrain_elastic.json")) as f:
        events = json.load(f)
    return dict(log=log, events=events, train_dir=train_dir, data_dir=data_dir,
                decoded=str(decoded), tmp_path=tmp_path)


@pytest.mark.slow
def test_a_lost_worker_and_one_taken_back_at_a_checkpoint_are_said_and_recorded(elastic):
    log, events, train_dir = elastic["log"], elastic["events"], elastic["train_dir"]
    assert [(e["event"], e["tasks"], e["workers_before"], e["workers_after"])
            for e in events] == [("lost", [3], 4, 3), ("taken in", [3], 3, 4)], events
    lost_at, back_at = events[0]["step"], events[1]["step"]
    # The chief saved the step it last completed, its staged batch left to
    # the resume (the input's position follows from the step).
    assert KILLED_AT <= lost_at < back_at < STEPS and back_at % SAVE_STEPS == 0, events
    assert re.search(rf"^\[task 0\] towertrain: error: .* lost worker task 3 .* \(step "
                     rf"{lost_at} done\): .*; saved step {lost_at} to {train_dir}/ckpt-{lost_at};",
                     log, re.M), log[-5000:]
    assert events[1]["at"] == "periodic checkpoint"
    assert all(e["recovery_seconds"] > 0 and e["first_step"] == e["step"] + 1 for e in events)
    assert f"[launcher] lost task(s) 3: going on with 3 worker(s) from step {lost_at}" in log
    assert ("[launcher] a worker is back: the 3 workers go on to their next checkpoint "
            f"(--save_model_steps={SAVE_STEPS}), stop together right after it, then 4 go "
            "on from there") in log, log[-3000:]
    assert (f"[task 0] Stopped at step {back_at} with every worker (SIGUSR1, a stop at the "
            "next checkpoint; the chief saves)") in log, log[-3000:]
    assert f"[launcher] taken in task(s) 3: going on with 4 worker(s) from step {back_at}" in log
    for workers, step in ((3, lost_at), (4, back_at)):
        assert re.search(rf"^\[launcher\] recovered in [\d.]+ s: {workers} worker\(s\) "
                         rf"trained step {step + 1}$", log, re.M), log[-3000:]
    assert ("[task 0] Topology:    checkpoint written by 4 worker(s) x 1 device(s), now 3 x 1; "
            "same global batch 12: continues exactly") in log, log[-3000:]
    assert ("[task 0] Topology:    checkpoint written by 3 worker(s) x 1 device(s), now 4 x 1; "
            "same global batch 12: continues exactly") in log, log[-3000:]
    with open(os.path.join(train_dir, "towertrain_run.json")) as f:
        record = json.load(f)
    assert [(c["step"], c["from"]["workers"], c["to"]["workers"], c["to"]["per_device"])
            for c in record["topology_changes"]] == [(lost_at, 4, 3, 4), (back_at, 3, 4, 3)]
    assert record["final_step"] == STEPS
    # Each survivor's one line names its log, which holds TensorFlow's abort.
    logs = re.findall(r"^\[task ([012])\] towertrain: error: .* lost worker task 3 .*"
                      r"TensorFlow's log: (\S+)$", log, re.M)
    assert sorted(task for task, _ in logs) == ["0", "1", "2"], [
        line for line in log.splitlines() if "towertrain: error" in line]
    for _, path in logs:
        with open(path) as f:
            assert "Aborting RingReduce" in f.read(), path
        os.remove(path)


@pytest.mark.slow
def test_the_elastic_run_equals_the_same_changes_made_by_hand(elastic):
    lost_at, back_at = (e["step"] for e in elastic["events"])
    reference = str(elastic["tmp_path"] / "reference")
    for name, workers, until in (("ref4", 4, lost_at), ("ref3", 3, back_at),
                                 ("ref4b", 4, STEPS)):
        _launch(elastic["tmp_path"], name, workers, _flags(elastic["data_dir"], reference,
                                                          until))
    for step in (lost_at, back_at, None):
        runs.assert_same_model(elastic["train_dir"], reference, tolerance=1e-5, step=step)


def _starts(log):
    """Each start of the workers: the pids the launcher printed, in task order."""
    starts = []
    for task, pid in re.findall(r"^\[launcher\] task (\d+): pid (\d+)", log, re.M):
        if task == "0":
            starts.append([])
        starts[-1].append(int(pid))
    return starts


@pytest.mark.slow
def test_every_example_is_trained_once_by_the_workers_of_its_step(elastic):
    """Start k of the workers trained steps (first_k, last_k]; each example of
    those steps' global batches was decoded by one of its workers exactly
    once, and none of a step trained before it (a repeat); what a start read
    ahead past its last step is the next start's to train."""
    from towertrain.input_pipeline.arrays import AUGMENT, epoch_seed
    lost_at, back_at = (e["step"] for e in elastic["events"])
    epochs = -(-STEPS * GLOBAL_BATCH // EXAMPLES)
    key = {int(epoch_seed(1234, epoch, AUGMENT)): epoch for epoch in range(epochs + 2)}
    steps_per_epoch = EXAMPLES // GLOBAL_BATCH

    def step_of(epoch, position):
        return epoch * steps_per_epoch + position // GLOBAL_BATCH + 1

    starts = _starts(elastic["log"])
    assert [len(pids) for pids in starts] == [4, 3, 4], starts
    trained = collections.Counter()
    for pids, (first, last) in zip(starts, ((0, lost_at), (lost_at, back_at),
                                            (back_at, STEPS))):
        seen = collections.Counter()
        for pid in pids:
            with open(os.path.join(elastic["decoded"], f"{pid}.txt")) as f:
                seen.update((key[int(k)], int(p)) for k, p in (line.split() for line in f))
        assert max(seen.values()) == 1, [e for e, n in seen.items() if n > 1][:10]
        steps = {e: step_of(*e) for e in seen}
        assert min(steps.values()) == first + 1, (first, sorted(seen)[:10])
        trained.update(e for e, step in steps.items() if step <= last)
    expected = {(epoch, position) for epoch in range(epochs) for position in range(EXAMPLES)
                if step_of(epoch, position) <= STEPS}
    assert set(trained) == expected and max(trained.values()) == 1
    assert len(glob.glob(os.path.join(elastic["decoded"], "*.txt"))) == 11


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


class _Workers:
    """A start of the workers, scripted: what supervise() returns, and a
    SIGUSR1 to the launcher while it supervises (answered at the next poll)."""

    def __init__(self, count, outcome, statuses=None, sigusr1=None, then=None):
        self.count, self.outcome, self.sigusr1, self.then = count, outcome, sigusr1, then
        self.procs = [None] * count
        self._statuses = statuses or [0] * count
        self.asked = []  # the signals the chief is to get once it trains

    def signal_chief_once_it_trains(self, signum):
        self.asked.append(signum)

    def supervise(self, grace, poll):
        if self.sigusr1:
            self.sigusr1(signal.SIGUSR1, None)
        poll()
        if self.then:
            self.then()
        return self.outcome

    def statuses(self):
        return self._statuses


def _elastic_run(tmp_path, starts, save_model_steps="10", num_workers=4):
    """An ElasticRun over scripted starts: (the run, its lines, the starts made)."""
    from types import SimpleNamespace
    from towertrain.commands import elastic
    flags = {"train_dir": str(tmp_path), "global_batch_size": "12",
             "save_model_steps": save_model_steps}
    options = SimpleNamespace(num_workers=num_workers, min_workers=3, max_workers=4,
                              stop_grace_secs=0)
    lines, made = [], []

    def start(count, on_first_step):
        made.append(starts[len(made)](count))
        assert made[-1].count == count
        return made[-1]
    run = elastic.ElasticRun(options, flags.get, lines.append, start,
                             {"workers": None, "signals": 0}, lambda count: None)
    return run, lines, made


def _checkpoint(train_dir, step, final=False):
    with open(os.path.join(train_dir, "checkpoint"), "w") as f:
        f.write(f'model_checkpoint_path: "ckpt-{step}"\n')
    with open(os.path.join(train_dir, "towertrain_run.json"), "w") as f:
        json.dump({"final_step": step} if final else {}, f)


def test_a_worker_back_waits_for_the_next_periodic_checkpoint_then_one_more_goes_on(tmp_path):
    run = None
    starts = [
        lambda n: _Workers(n, (137, 3), [75, 75, 75, 137], then=lambda: _checkpoint(tmp_path, 20)),
        lambda n: _Workers(n, (0, None), sigusr1=run._on_sigusr1,
                           then=lambda: _checkpoint(tmp_path, 30)),
        lambda n: _Workers(n, (0, None), then=lambda: _checkpoint(tmp_path, 50, final=True))]
    run, lines, made = _elastic_run(tmp_path, starts)
    assert run.run() == 0
    assert [(w.count, w.asked) for w in made] == [(4, []), (3, [signal.SIGUSR1]), (4, [])]
    assert ("[launcher] a worker is back: the 3 workers go on to their next checkpoint "
            "(--save_model_steps=10), stop together right after it, then 4 go on from there"
            ) in lines
    assert [(e["event"], e["step"], e["workers_after"], e.get("at")) for e in run.events] == [
        ("lost", 20, 3, None), ("taken in", 30, 4, "periodic checkpoint")]


def test_without_periodic_checkpoints_a_worker_back_stops_the_workers_at_their_next_step(
        tmp_path):
    run = None
    starts = [lambda n: _Workers(n, (0, None), sigusr1=run._on_sigusr1,
                                 then=lambda: _checkpoint(tmp_path, 7)),
              lambda n: _Workers(n, (0, None), then=lambda: _checkpoint(tmp_path, 9, True))]
    run, lines, made = _elastic_run(tmp_path, starts, save_model_steps=None, num_workers=3)
    assert run.run() == 0
    assert [(w.count, w.asked) for w in made] == [(3, [signal.SIGTERM]), (4, [])]
    assert ("[launcher] a worker is back: no --save_model_steps, so no periodic checkpoint "
            "to wait for; the 3 workers stop together at their next step (the chief saves "
            "there), then 4 go on from there") in lines
    assert run.events[0]["at"] == "stop on demand (no --save_model_steps)"


def test_a_run_that_ends_before_the_checkpoint_is_not_started_again(tmp_path):
    run = None
    starts = [lambda n: _Workers(n, (0, None), sigusr1=run._on_sigusr1,
                                 then=lambda: _checkpoint(tmp_path, 50, final=True))]
    run, lines, made = _elastic_run(tmp_path, starts, num_workers=3)
    assert run.run() == 0 and len(made) == 1 and run.events == []
    assert lines[-1] == ("[launcher] the run finished at step 50 before the waiting worker "
                         "was taken in")


def test_a_worker_back_when_every_worker_runs_is_said_and_changes_nothing(tmp_path):
    run = None
    starts = [lambda n: _Workers(n, (0, None), sigusr1=run._on_sigusr1,
                                 then=lambda: _checkpoint(tmp_path, 50, final=True))]
    run, lines, made = _elastic_run(tmp_path, starts)
    assert run.run() == 0 and made[0].asked == [] and run.events == []
    assert lines == ["[launcher] a worker is back, but 4 run already (--max_workers=4)"]


def test_the_chief_gets_the_stop_request_only_once_it_trains(monkeypatch):
    """Before its first step line the chief may not have its handlers yet
    (SIGUSR1 would kill it): the launcher holds the signal until then."""
    from types import SimpleNamespace
    from towertrain.commands import launch
    sent = []
    monkeypatch.setattr(launch.os, "kill", lambda pid, signum: sent.append((pid, signum)))
    workers = launch.Workers.__new__(launch.Workers)
    proc = SimpleNamespace(pid=4242, poll=lambda: None,
                           stdout=["Step\tImg/sec\ttotal_loss\n", "21\timages/sec: 9.0\n",
                                   "22\timages/sec: 9.0\n"])
    workers.procs, workers.write, workers.on_first_step = [proc], lambda line: None, None
    workers._chief_trains, workers._for_chief = False, None
    workers._chief_lock = launch.threading.Lock()
    workers.signal_chief_once_it_trains(signal.SIGUSR1)
    assert sent == []
    workers._copy(0, proc)
    assert sent == [(4242, signal.SIGUSR1)]
    workers.signal_chief_once_it_trains(signal.SIGTERM)
    assert sent == [(4242, signal.SIGUSR1), (4242, signal.SIGTERM)]
