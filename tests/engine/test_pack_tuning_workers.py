"""--gradient_pack_mb=auto across 2 worker processes on 127.0.0.1: every
worker times the same candidates at the same steps and takes the same pick
from the same numbers (each candidate's slowest worker, one collective).
Run as a script, this file is the worker."""
import json
import os
import subprocess
import sys

import numpy as np

from helpers.ports import free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run_worker(hosts, task, out_path):
    import helpers.tiny_models  # noqa: F401 - registers tiny_wide
    from towertrain import Params, trainer as trainer_lib
    params = Params(model="tiny_wide", device="cpu", num_gpus=1, batch_size=2,
                    variable_update="collective_all_reduce", worker_hosts=hosts,
                    task_index=task, collective_timeout_secs=60, optimizer="momentum",
                    gradient_pack_mb="auto", num_warmup_batches=6, num_batches=2,
                    display_every=100)
    trainer_lib.join_cluster(params)
    trainer = trainer_lib.Trainer(params)
    lines = []
    trainer.train(write=lines.append)
    np.savez(out_path + ".npz", *[v.numpy() for v in trainer.variables.trainable_copies()[0]])
    with open(out_path + ".json", "w") as f:
        json.dump({"lines": lines, "pack_bytes": trainer._exchange.gradient_pack_bytes}, f)
    sys.stdout.flush()
    os._exit(0)  # TensorFlow's gRPC teardown is not needed


def test_two_workers_take_one_pick_from_the_same_numbers(tmp_path):
    hosts = ",".join(f"127.0.0.1:{port}" for port in free_ports(2))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join([REPO, os.path.join(REPO, "tests"),
                                         env.get("PYTHONPATH", "")])
    env.pop("TF_CONFIG", None)
    outs = [str(tmp_path / f"worker{task}") for task in range(2)]
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "worker", hosts,
                               str(task), outs[task]], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for task in range(2)]
    try:
        logs = [proc.communicate(timeout=240)[0] for proc in procs]
        for proc, log in zip(procs, logs):
            assert proc.returncode == 0, log[-3000:]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    results = []
    for out in outs:
        with open(out + ".json") as f:
            results.append(json.load(f))
    picked = [[line for line in r["lines"] if line.startswith("Gradient packs: picked ")]
              for r in results]
    # One line each, the same pick and the same times (the max over the workers).
    assert len(picked[0]) == 1 and picked[0] == picked[1], picked
    assert "one pack per dtype" in picked[0][0] and "4 MB" in picked[0][0]
    assert results[0]["pack_bytes"] == results[1]["pack_bytes"]
    weights = [np.load(out + ".npz") for out in outs]
    for name in weights[0].files:
        np.testing.assert_array_equal(weights[0][name], weights[1][name])


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "worker":
    _run_worker(sys.argv[2], int(sys.argv[3]), sys.argv[4])
