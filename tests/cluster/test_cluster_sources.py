"""Where the cluster comes from (--cluster_source): --worker_hosts, TF_CONFIG
(Kubernetes) or Slurm, through TensorFlow's cluster resolvers."""
import json
import os
import re

import pytest

from helpers import cluster_runs as runs

from towertrain.config.params import Params, ParamsError
from towertrain.config import machine
from towertrain.plan import cluster as resolvers

SLURM_TWO_TASKS = {"SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2",
                   "SLURM_STEP_NODELIST": "127.0.0.1", "SLURM_STEP_TASKS_PER_NODE": "2"}


def _params(**changes):
    base = dict(model="trivial", device="cpu", variable_update="collective_all_reduce")
    base.update(changes)
    return Params(**base)


def test_slurm_environment_gives_the_cluster_through_the_resolver():
    cluster = resolvers.resolve(_params(slurm_port_base=7000), SLURM_TWO_TASKS)
    assert cluster.workers == ("127.0.0.1:7000", "127.0.0.1:7001")
    assert (cluster.task_index, cluster.source) == (1, "slurm")
    assert resolvers.describe(cluster) == "task 1 of 2 at 127.0.0.1:7001, from Slurm"
    # Two nodes of two tasks each, in Slurm's compressed notations.
    four = dict(SLURM_TWO_TASKS, SLURM_PROCID="2", SLURM_STEP_NUM_TASKS="4",
                SLURM_STEP_NODELIST="node[07-08]", SLURM_STEP_TASKS_PER_NODE="2(x2)")
    cluster = resolvers.resolve(_params(), four)
    assert cluster.workers == ("node07:8888", "node07:8889", "node08:8888", "node08:8889")
    assert cluster.address == "node08:8888" and not cluster.is_chief
    # One task is one process (without collective_all_reduce too).
    one = dict(SLURM_TWO_TASKS, SLURM_STEP_NUM_TASKS="1", SLURM_STEP_TASKS_PER_NODE="1",
               SLURM_PROCID="0")
    assert resolvers.resolve(_params(), one).num_workers == 1
    assert resolvers.resolve(_params(variable_update="replicated"), one).num_workers == 1
    with pytest.raises(ParamsError, match="--cluster_source=slurm: SLURM_PROCID not found"):
        resolvers.resolve(_params(cluster_source="slurm"), {})


def test_slurm_with_device_gpu_gives_each_task_num_gpus_of_its_node(monkeypatch):
    """With --device=gpu, task K of a node's tasks gets GPUs K*num_gpus ..
    (K+1)*num_gpus-1 of the node's through CUDA_VISIBLE_DEVICES, which
    SlurmClusterResolver sets in the process's environment (auto_set_gpu).
    The node's GPUs are those Slurm hands the step (`--gres=gpu:4` sets
    CUDA_VISIBLE_DEVICES=0,1,2,3), as the resolver counts them."""
    for name in [n for n in os.environ if n.startswith("SLURM_")] + ["TF_CONFIG"]:
        monkeypatch.delenv(name, raising=False)
    for name, value in SLURM_TWO_TASKS.items():  # task 1 of 2, both on one node
        monkeypatch.setenv(name, value)
    for num_gpus, expected in [(2, "2,3"), (1, "1")]:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
        cluster = resolvers.resolve(_params(device="gpu", num_gpus=num_gpus))
        assert (cluster.task_index, cluster.num_workers, cluster.source) == (1, 2, "slurm")
        assert os.environ["CUDA_VISIBLE_DEVICES"] == expected, num_gpus
    # On a CPU no GPU is handed out: the variable stays as it was.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    assert resolvers.resolve(_params(device="cpu")).task_index == 1
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"


def test_tf_config_with_a_chief_job_and_source_conflicts():
    config = {"cluster": {"chief": ["c:1"], "worker": ["a:1", "b:2"]},
              "task": {"type": "worker", "index": 1}}
    cluster = resolvers.resolve(_params(), {"TF_CONFIG": json.dumps(config)})
    assert (cluster.workers, cluster.task_index, cluster.source) == (
        ("c:1", "a:1", "b:2"), 2, "tf_config")
    config["task"] = {"type": "chief", "index": 0}
    assert resolvers.resolve(_params(), {"TF_CONFIG": json.dumps(config)}).is_chief
    both = dict(SLURM_TWO_TASKS, TF_CONFIG=json.dumps(config))
    with pytest.raises(ParamsError, match=r"given more than once \(TF_CONFIG, Slurm\); "
                                          r"choose one with --cluster_source=tf_config\|slurm"):
        resolvers.resolve(_params(), both)
    assert resolvers.resolve(_params(cluster_source="slurm"), both).source == "slurm"
    assert resolvers.resolve(_params(cluster_source="tf_config"), both).source == "tf_config"
    flags = _params(worker_hosts="h:1,h:2", task_index=1)
    with pytest.raises(ParamsError, match=r"\(--worker_hosts/--task_index, Slurm\)"):
        resolvers.resolve(flags, SLURM_TWO_TASKS)
    assert resolvers.resolve(_params(worker_hosts="h:1,h:2", task_index=1,
                                         cluster_source="flags"), both).address == "h:2"
    with pytest.raises(ParamsError, match="--cluster_source=tf_config: the TF_CONFIG"):
        resolvers.resolve(_params(cluster_source="tf_config"), {})


def test_cluster_source_flag_checks():
    with pytest.raises(ParamsError, match="--cluster_source=slurm: needs --variable_update="):
        _params(cluster_source="slurm", variable_update="replicated")
    with pytest.raises(ParamsError, match="--cluster_source=flags: needs --worker_hosts"):
        _params(cluster_source="flags")
    with pytest.raises(ParamsError, match="--worker_hosts=a:1,b:2: is not read with "
                                          "--cluster_source=slurm"):
        _params(cluster_source="slurm", worker_hosts="a:1,b:2")
    with pytest.raises(ParamsError, match="--cluster_source=mpi: must be one of"):
        _params(cluster_source="mpi")
    with pytest.raises(ParamsError, match="--slurm_port_base=0: must be a port"):
        _params(slurm_port_base=0)


TWO_WORKERS = json.dumps({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
                          "task": {"type": "worker", "index": 1}})


@pytest.mark.parametrize("tf_config, line", [
    (TWO_WORKERS, "towertrain: error: --variable_update=replicated: TF_CONFIG is set, which "
     "describes a cluster of workers that needs --variable_update=collective_all_reduce (each "
     "task would otherwise train alone); pass it, or unset TF_CONFIG to train in one process"),
    ('{"cluster": ', "towertrain: error: TF_CONFIG: not a cluster description (Expecting value: "
     "line 1 column 13 (char 12)); expected {\"cluster\": {\"worker\": [\"h:p\", ...]}, "
     "\"task\": {\"type\": \"worker\", \"index\": K}}")])
def test_every_cluster_source_needs_collective_all_reduce_and_a_bad_one_is_never_ignored(
        tf_config, line):
    """TF_CONFIG without --variable_update=collective_all_reduce is refused as
    --worker_hosts is (task 1 trained alone, exit 0), and a malformed one is
    an error whatever the exchange (it was ignored)."""
    import subprocess
    done = subprocess.run(runs.towertrain("--model=trivial", "--device=cpu", "--num_batches=1",
                                          "--variable_update=replicated"),
                          env=runs.env(TF_CONFIG=tf_config), capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (2, "", [line])


def test_a_slurm_step_of_several_tasks_needs_collective_all_reduce():
    with pytest.raises(ParamsError, match=r"^--variable_update=replicated: this Slurm step has 2 "
                                          r"tasks, which describes a cluster of workers that "
                                          r"needs .*; pass it, or run one task \(srun -n 1\)"):
        resolvers.resolve(_params(variable_update="replicated"), SLURM_TWO_TASKS)


@pytest.mark.slow
def test_srun_environment_two_tasks_equal_one_process_with_both_devices(tmp_path,
                                                                        tmp_path_factory):
    """What srun sets for 2 tasks on one node: 2 processes find each other and
    train as one process holding both devices."""
    data_dir, reference = runs.data_and_reference(tmp_path_factory)  # shared, 60 steps
    train_dir = str(tmp_path / "slurm")
    base = runs.free_port_run(2)
    flags = runs.run_flags(data_dir, train_dir, runs.EPOCHS, *runs.topology(2, 1),
                           f"--slurm_port_base={base}")
    with runs.Processes(str(tmp_path)) as procs:
        for task in range(2):
            procs.start(runs.towertrain(*flags), f"task{task}",
                        runs.env(**dict(SLURM_TWO_TASKS, SLURM_PROCID=str(task))))
        statuses = procs.wait(timeout=240)
        assert statuses == [0, 0], procs.log(0)[-2000:] + procs.log(1)[-2000:]
        chief, worker = procs.log(0), procs.log(1)
    assert "2 workers x 1 device, task 0 of 2 (chief) at 127.0.0.1:%d, from Slurm" % base \
        in chief, chief[:2000]
    assert "worker task 1 of 2 at 127.0.0.1:%d, from Slurm: training" % (base + 1) in worker
    # Both tasks on this host: each worker's intra-op pool (read back from
    # TensorFlow for the header) is its share of the cores, not all of them.
    share = max(1, machine.available_cores() // 2)
    assert re.search(r"^Threads:\s+intra-op %d per process \(%d cores / 2 workers on this host"
                     % (share, machine.available_cores()), chief, re.MULTILINE), chief[:2000]
    assert runs.checkpoint_steps(train_dir)[-1] == 6 * runs.EPOCHS
    runs.assert_same_model(train_dir, reference)


def test_a_port_in_use_is_one_line_naming_it():
    """Another process listens on this task's port: TensorFlow's first op
    raised 'UnknownError: Could not start gRPC server', a traceback."""
    import socket
    import subprocess
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run(runs.towertrain(
            "--model=trivial", "--device=cpu", "--num_batches=1",
            "--variable_update=collective_all_reduce", "--task_index=0",
            f"--worker_hosts=127.0.0.1:{port},127.0.0.1:1"), env=runs.env(),
            capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (2, "", [
        f"towertrain: error: --worker_hosts/--task_index: this task's address 127.0.0.1:{port} "
        f"(task 0) cannot be served: port {port} is in use by another process; free the port "
        "or give this task another address"]), done.stderr[-3000:]
