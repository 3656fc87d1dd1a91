"""Worker processes of the cluster tests: start, watch, reap; their checkpoints.

Every process started here is in `Processes`, whose exit (a `with` block)
kills and waits for each one still running, whatever way the test ended;
every wait has a deadline, so no test can hang.
"""
import glob
import os
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np

from helpers.checkpoint_files import committed_steps

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(REPO, "tests")
NUM_TRAIN = 48  # 6 steps per epoch at the global batch of 8
# Every run of the cluster tests trains this many epochs (60 steps), so that
# one reference run serves them all. A worker process costs far more to start
# (TensorFlow's import, the trace, the cluster's setup) than its steps, so the
# tests signal or kill early and leave the steps as the margin that keeps the
# run alive until the signal lands.
EPOCHS = 10


def run_flags(data_dir, train_dir, num_epochs, *extra):
    """The run every cluster test trains: a model with dropout (cifar_cnn) on
    CIFAR-layout files with random crops and flips, global batch 8 however it
    is split, so every exactness claim covers randomness."""
    return ["--model=cifar_cnn", "--distortions", "--device=cpu", "--data_dir=" + data_dir,
            "--num_epochs=%d" % num_epochs, "--num_warmup_batches=0", "--optimizer=momentum",
            "--init_learning_rate=0.01", "--train_dir=" + train_dir, "--display_every=1",
            "--collective_timeout_secs=20", *extra]


def topology(workers, devices):
    """Flags of `workers` x `devices` with the global batch 8."""
    update = "collective_all_reduce" if workers > 1 else "replicated"
    return ["--num_gpus=%d" % devices, "--batch_size=%d" % (8 // (workers * devices)),
            "--variable_update=" + update]


def env(**extra):
    out = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1",
               TF_DETERMINISTIC_OPS="1")
    out["PYTHONPATH"] = os.pathsep.join([REPO, TESTS, out.get("PYTHONPATH", "")])
    for name in [n for n in out if n.startswith("SLURM_")] + ["TF_CONFIG"]:
        out.pop(name, None)
    out.update(extra)
    return out


def free_port_run(count):
    """The first of `count` consecutive free loopback ports (Slurm's port_base)."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count > 65535:
            continue
        try:
            held = []
            for port in range(base, base + count):
                s = socket.socket()
                held.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError("no run of free ports")


class Processes:
    """The processes of one test: started with logs in files, reaped on exit."""

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.procs, self.logs = [], []

    def __enter__(self):
        return self

    def start(self, args, name, environ=None):
        path = os.path.join(self.log_dir, f"{name}.log")
        log = open(path, "w")
        proc = subprocess.Popen(args, cwd=REPO, env=environ or env(), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.procs.append(proc)
        self.logs.append(path)
        return proc

    def log(self, index):
        with open(self.logs[index]) as f:
            return f.read()

    def wait(self, timeout):
        """Waits for every process (one deadline); returns their exit statuses."""
        deadline = time.monotonic() + timeout
        for proc in self.procs:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        return [proc.returncode for proc in self.procs]

    def wait_for(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, f"timed out waiting for {what}:\n" + (
                "\n".join(self.log(i)[-1500:] for i in range(len(self.procs))))
            for i, proc in enumerate(self.procs):
                assert proc.poll() is None, f"process {i} ended ({proc.returncode}) before " \
                    f"{what}:\n{self.log(i)[-3000:]}"
            time.sleep(0.05)

    def __exit__(self, *exc):
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        return False


def towertrain(*flags):
    return [sys.executable, "-m", "towertrain", *flags]


def last_step_printed(log_text):
    """The last training step a log shows (--display_every=1), 0 if none."""
    steps = re.findall(r"^(\d+)\timages/sec", log_text, re.M)
    return int(steps[-1]) if steps else 0


def checkpoint_steps(train_dir):
    """The steps of train_dir's committed checkpoints (those a resume can use)."""
    return committed_steps(train_dir)


def model_tensors(train_dir, step=None):
    """Model variables, optimizer slots and step of the latest checkpoint (of
    ckpt-`step` if given). Seed-generator states are left out: the step sets
    them from (seed, step, tower) before each use, so what was kept of them
    is never read (and is a slot's of whichever tower kept it)."""
    import tensorflow as tf
    reader = tf.train.load_checkpoint(
        train_dir if step is None else os.path.join(train_dir, f"ckpt-{step}"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith(("model/", "slots/", "step/"))
            and "seed_generator_state" not in name}


def assert_same_model(got_dir, expected_dir, tolerance=1e-5, step=None):
    """The latest checkpoints (both ckpt-`step` if given) hold the same model."""
    got, expected = model_tensors(got_dir, step), model_tensors(expected_dir, step)
    assert sorted(got) == sorted(expected)
    assert any(name.startswith("model/") for name in expected)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=tolerance, atol=tolerance,
                                   err_msg=name)


def seed_checkpoint(from_dir, step, train_dir):
    """Starts train_dir at from_dir's ckpt-`step`, as if its run had stopped there."""
    import shutil
    os.makedirs(train_dir)
    for path in glob.glob(os.path.join(from_dir, f"ckpt-{step}.*")):
        shutil.copy(path, train_dir)
    with open(os.path.join(train_dir, "checkpoint"), "w") as f:
        f.write(f'model_checkpoint_path: "ckpt-{step}"\n'
                f'all_model_checkpoint_paths: "ckpt-{step}"\n')


def data_and_reference(tmp_path_factory, num_epochs=EPOCHS):
    """(data_dir, train_dir of the uninterrupted reference): one process with
    both devices (`python -m towertrain`, deterministic ops) trains
    `num_epochs` once per test session, keeping a checkpoint of every step (a
    test may compare at any step). Its default intra-op threads are a
    worker of 2's on this host (cores / towers x workers), so the sums match."""
    from helpers import cifar_files
    root = tmp_path_factory.getbasetemp() / "cluster_reference"
    data_dir = str(root / "data")
    train_dir = str(root / f"reference_{num_epochs}")
    if not os.path.exists(os.path.join(data_dir, "test_batch.bin")):
        cifar_files.write_dataset(data_dir, NUM_TRAIN, 8)
    if not checkpoint_steps(train_dir):
        done = subprocess.run(
            towertrain(*run_flags(data_dir, train_dir, num_epochs, *topology(1, 2),
                                  "--save_model_steps=1",
                                  f"--max_ckpts_to_keep={6 * num_epochs + 1}")),
            cwd=REPO, env=env(), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return data_dir, train_dir
