"""Several workers on one GPU machine each get GPUs of their own: the launcher
and Slurm set CUDA_VISIBLE_DEVICES per worker from its rank on the machine
and --num_gpus; workers that would share a GPU are refused, with the reason.
The machine's GPUs are injected (CUDA_VISIBLE_DEVICES, device nodes): no GPU
is needed."""
import json
import os
import re
import subprocess
import sys

import pytest

from helpers import cluster_runs as runs
from towertrain.commands import launch
from towertrain.config import gpu_share
from towertrain.config.cluster_spec import Cluster
from towertrain.config.params import Params
from towertrain.engine.process import devices
from towertrain.errors import ClusterError, DeviceError
from towertrain.plan import cluster as resolvers

ENV_WORKER = """import json, os, sys
print(json.dumps([os.environ.get("CUDA_VISIBLE_DEVICES"), sys.argv[1:]]), flush=True)
"""
SHARED = ("--num_gpus=3: 2 workers on this machine need 6 GPUs of their own, and it has 4 "
          "(CUDA_VISIBLE_DEVICES=0,1,2,3); two processes on one GPU are refused (each maps "
          "all it sees: out of memory, and NCCL refuses two ranks on one GPU); lower "
          "--num_gpus or the workers per machine")


def _launch(tmp_path, visible, *flags):
    (tmp_path / "env_worker.py").write_text(ENV_WORKER)
    env = runs.env(CUDA_VISIBLE_DEVICES=visible)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    return subprocess.run([sys.executable, "-m", "towertrain.launch", "--num_workers=2",
                           "--module=env_worker", "--", *flags], env=env, cwd=runs.REPO,
                          capture_output=True, text=True, timeout=60)


def test_two_launched_workers_with_2_gpus_each_of_4_get_disjoint_gpus(tmp_path):
    # The machine's 4 GPUs as the launcher sees them; a job given GPUs 4-7
    # hands out those, not 0-3.
    for visible, expected in [("0,1,2,3", ["0,1", "2,3"]), ("4,5,6,7", ["4,5", "6,7"])]:
        done = _launch(tmp_path, visible, "--device=gpu", "--num_gpus=2")
        assert done.returncode == 0, done.stdout + done.stderr
        seen = [json.loads(re.search(rf"^\[task {k}\] (\[.*\])$", done.stdout, re.M).group(1))
                for k in range(2)]
        assert [s[0] for s in seen] == expected
        assert re.search(rf"^\[launcher\] task 1: pid \d+, GPUs {expected[1]}$", done.stdout,
                         re.M), done.stdout
    # --device=cpu: no GPU is handed out, each worker keeps the launcher's list.
    done = _launch(tmp_path, "0,1,2,3", "--device=cpu", "--num_gpus=2")
    assert done.returncode == 0 and done.stdout.count('["0,1,2,3", ') == 2, done.stdout


def test_workers_that_would_share_a_gpu_are_refused_before_any_starts(tmp_path):
    done = _launch(tmp_path, "0,1,2,3", "--device=gpu", "--num_gpus=3")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == f"towertrain.launch: error: {SHARED}\n"
    assert "[task" not in done.stdout
    done = _launch(tmp_path, "0,1,2,3", "--device=gpu", "--num_gpus=2", "--gpu_indices=0,1")
    assert done.returncode == 2 and "--gpu_indices=0,1: the launcher gives each worker its " \
        "own GPUs through CUDA_VISIBLE_DEVICES" in done.stderr, done.stderr


def test_without_device_flag_the_driver_s_gpus_are_shared_out(tmp_path):
    for name in ("nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl", "nvidia-uvm"):
        (tmp_path / name).touch()
    nodes = str(tmp_path / "nvidia[0-9]*")
    assert launch.gpu_shares(2, ["--num_gpus", "2"], {}, nodes) == ["0,1", "2,3"]
    assert launch.gpu_shares(4, ["--num_gpus=1"], {}, nodes) == ["0", "1", "2", "3"]
    assert launch.gpu_shares(1, ["--num_gpus=8"], {}, nodes) == [None]  # one worker: all
    with pytest.raises(DeviceError, match=r"^--num_gpus=2: 4 workers on this machine need 8"):
        launch.gpu_shares(4, ["--num_gpus=2"], {}, nodes)
    assert launch.gpu_shares(2, ["--num_gpus=2"], {}, str(tmp_path / "none*")) == [None, None]


SLURM_NODE = {"SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2",
              "SLURM_STEP_NODELIST": "127.0.0.1", "SLURM_STEP_TASKS_PER_NODE": "2"}


def _slurm(num_gpus, **env):
    params = Params(model="trivial", device="gpu", num_gpus=num_gpus,
                    variable_update="collective_all_reduce", all_reduce_spec="psgpu/xring")
    environ = dict(SLURM_NODE, **env)
    return resolvers.from_slurm(params, environ), environ


def test_slurm_tasks_of_one_node_get_their_share_of_its_gpus_list():
    # SlurmClusterResolver's own split would say "2,3": GPUs the job was not given.
    cluster, environ = _slurm(2, CUDA_VISIBLE_DEVICES="4,5,6,7")
    assert (cluster.task_index, environ["CUDA_VISIBLE_DEVICES"]) == (1, "6,7")
    # srun --gpus-per-task already bound each task's own: kept.
    cluster, environ = _slurm(2, CUDA_VISIBLE_DEVICES="0,1", SLURM_GPUS_PER_TASK="2")
    assert environ["CUDA_VISIBLE_DEVICES"] == "0,1"
    with pytest.raises(ClusterError) as raised:
        _slurm(3, CUDA_VISIBLE_DEVICES="0,1,2,3")
    assert str(raised.value) == "--cluster_source=slurm: " + SHARED.replace(
        "on this machine", "on node 127.0.0.1")


def test_a_worker_beside_others_that_sees_every_gpu_is_refused():
    two_here = Cluster(("127.0.0.1:1", "localhost:2"), task_index=1)
    with pytest.raises(DeviceError) as raised:
        devices.check_own_gpus(two_here, environ={})
    assert str(raised.value) == (
        "--device=gpu: 1 other worker(s) of this cluster run on this machine (localhost:2) "
        "and this one sees every GPU (CUDA_VISIBLE_DEVICES is not set), so they would share "
        "GPUs; start them with python -m towertrain.launch or srun, which give each its own, "
        "or set CUDA_VISIBLE_DEVICES per worker")
    devices.check_own_gpus(two_here, environ={"CUDA_VISIBLE_DEVICES": "1"})
    devices.check_own_gpus(Cluster(("a:1", "b:1"), task_index=1), environ={})


def test_an_empty_cuda_visible_devices_means_no_gpu_however_many_the_driver_shows(tmp_path):
    """CUDA_VISIBLE_DEVICES='' hides every GPU from this process (CUDA's
    meaning): it is not 'unset', so the driver's 4 device nodes are not
    handed out."""
    for name in ("nvidia0", "nvidia1", "nvidia2", "nvidia3"):
        (tmp_path / name).touch()
    nodes = str(tmp_path / "nvidia[0-9]*")
    assert gpu_share.machine_gpus({"CUDA_VISIBLE_DEVICES": ""}, nodes) == ()
    assert gpu_share.machine_gpus({"CUDA_VISIBLE_DEVICES": " , "}, nodes) == ()
    assert gpu_share.machine_gpus({}, nodes) == ("0", "1", "2", "3")
    assert launch.gpu_shares(2, ["--num_gpus=1"], {"CUDA_VISIBLE_DEVICES": ""}, nodes) == \
        [None, None]
    with pytest.raises(DeviceError, match=r"^--num_gpus=1: 2 workers on this machine need 2 "
                                          r"GPUs of their own, and it has 0; "):
        gpu_share.share(0, 2, 1, gpu_share.machine_gpus({"CUDA_VISIBLE_DEVICES": ""}, nodes))


def test_gpus_left_over_are_no_refusal():
    """2 workers x 1 GPU on a machine of 4: each its own, two left unused
    (refused only when they do not go round, not whenever they differ)."""
    gpus = ("0", "1", "2", "3")
    assert [gpu_share.share(rank, 2, 1, gpus) for rank in range(2)] == ["0", "1"]
    assert [gpu_share.share(rank, 3, 1, gpus) for rank in range(3)] == ["0", "1", "2"]
