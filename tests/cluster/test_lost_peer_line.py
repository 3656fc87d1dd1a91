"""A worker killed under the launcher reads as one event: each survivor says
one line (which peer, at which step, what happens next), the chief saves the
step it last completed, and TensorFlow's abort logs (ring_alg.cc, RecvBuf,
"Restart your program to reset") go to the worker's log file, not the
output, and that file holds them (with the command line's own log levels,
which hide TensorFlow's C++ lines from the output); the killed worker's
empty log is removed by the launcher. A survivor that says its line 4 s
after the others (a loaded machine) still names only the lost worker: the
others wait for it, their servers answering."""
import os
import re
import signal
import sys

from helpers import cluster_runs as runs
from towertrain.commands import worker_log

LAUNCH = [sys.executable, "-m", "towertrain.launch"]
LINE = re.compile(
    r"^towertrain: error: worker task (\d) \(127\.0\.0\.1:\d+\) lost worker task 2 "
    r"\(127\.0\.0\.1:\d+\) in step (\d+) \(step (\d+) done\): unreachable \(\w+\); (.*); "
    r"this worker exits \(status 75: a launcher with --min_workers goes on with the workers "
    r"left\); TensorFlow's log: (\S+)$")


def _lines_of(log, task):
    return [line[len(f"[task {task}] "):] for line in log.splitlines()
            if line.startswith(f"[task {task}] ")]


def test_each_survivor_says_one_line_and_the_chief_saves_its_last_step(tmp_path):
    train_dir = str(tmp_path / "train")
    flags = ["--model=trivial", "--device=cpu", "--batch_size=4", "--num_batches=1000000",
             "--num_warmup_batches=0", "--display_every=1000000", f"--train_dir={train_dir}",
             "--save_model_steps=1000000", "--collective_timeout_secs=20"]
    env = runs.env(LATE_SURVIVOR_TASK="1", LATE_SURVIVOR_SECS="4")
    env.pop("TF_CPP_MIN_LOG_LEVEL")  # the command line's own default, as a user runs it
    with runs.Processes(str(tmp_path)) as procs:
        launcher = procs.start([*LAUNCH, "--num_workers=3", "--module=helpers.late_survivor",
                                "--", *flags], "launcher", env)
        procs.wait_for(lambda: "[task 0] Step\tImg/sec" in procs.log(0)
                       and "[task 2] worker task 2 of 3" in procs.log(0), 240,
                       "the first step")
        pid = int(re.search(r"^\[launcher\] task 2: pid (\d+)", procs.log(0), re.M).group(1))
        before = len(procs.log(0))
        os.kill(pid, signal.SIGKILL)
        assert launcher.wait(timeout=60) == 128 + signal.SIGKILL
        log = procs.log(0)
    after = log[before:]
    assert "[launcher] task 2 failed (exit status 137); stopped every worker" in after, log
    # What each survivor printed once the peer was killed: one line.
    said = {task: _lines_of(after, task) for task in (0, 1)}
    assert [len(said[0]), len(said[1])] == [1, 1], after
    for task in (0, 1):
        found = LINE.match(said[task][0])
        assert found, said[task][0]
        assert int(found.group(1)) == task and int(found.group(2)) == int(found.group(3)) + 1
        with open(found.group(5)) as f:  # TensorFlow's abort lines, in the log file
            kept = f.read()
        assert "ring_alg.cc" in kept and "Aborting RingReduce" in kept, kept[:2000]
        os.remove(found.group(5))
    assert not os.path.exists(worker_log.path_of(2, pid))  # killed: empty, removed
    chief = LINE.match(said[0][0])
    step = int(chief.group(3))
    assert chief.group(4) == f"saved step {step} to {train_dir}/ckpt-{step}", said[0][0]
    assert LINE.match(said[1][0]).group(4) == "the chief saves its last step"
    assert os.path.exists(f"{train_dir}/ckpt-{step}.index")
    assert "ring_alg" not in after and "Restart your program" not in after, after
