"""--num_intra_threads, --num_inter_threads, --xla, --mkl/--kmp_*, --allow_growth,
--gpu_indices and --sync_on_finish: each setting really reaches TensorFlow.

Thread pools and the OpenMP environment must precede TensorFlow's start, so one
CLI run in a fresh process (the one slow test here, ~20-50 s on a loaded 2-core
machine: TensorFlow's import and an XLA compile) checks them together: a spy on the CLI's TensorFlow
import records the environment at that moment, and at exit the process reads
tf.config back and lists the op types of the functions it ran (XLA clusters).
"""
import json
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from helpers.cli import TESTS_DIR
from towertrain import Params, Trainer
from towertrain import plan
from towertrain.config.machine import Machine
from towertrain.engine.process import runtime
from towertrain.errors import ParamsError
from towertrain.engine.process import settings as plan_runtime


def runtime_of(params, cores=None):
    """The run plan's Runtime section of `params` (towertrain.plan), on this
    machine or on one with `cores` cores and no GPU."""
    return plan.lay_out(params, machine=Machine(cores=cores) if cores else None).runtime


def environment(params):
    return dict(runtime_of(params).environment)


def configure(params, gpus=None, cores=None):
    runtime.configure(runtime_of(params, cores), gpus=gpus)


def intra_op_threads(params, cluster, cores, towers=1):
    return plan_runtime.intra_op_threads(params.num_intra_threads, params.device,
                                         cluster.workers_on_this_host(), cores, towers)

SPY = f"""
import atexit, json, os, sys
sys.path.insert(0, {TESTS_DIR!r})
from towertrain.commands import common, train
seen = {{}}
real_import = common.import_tensorflow_quietly

def spy():
    seen["tensorflow_loaded_before"] = "tensorflow" in sys.modules
    seen["env"] = {{k: os.environ.get(k) for k in
                   ("KMP_BLOCKTIME", "KMP_SETTINGS", "KMP_AFFINITY", "OMP_NUM_THREADS")}}
    real_import()
    from towertrain.engine.run import loop
    real_run = loop.run

    def collecting_run(*args, **kwargs):  # after setup: collection starts the runtime
        from tensorflow.python.eager import context
        context.context().enable_graph_collection()
        return real_run(*args, **kwargs)
    loop.run = collecting_run

def report():
    import tensorflow as tf
    from tensorflow.python.eager import context
    metadata = context.context().export_run_metadata()
    seen["ops"] = sorted({{node.op for function in metadata.function_graphs
                          for graph in function.partition_graphs for node in graph.node}})
    seen["intra"] = tf.config.threading.get_intra_op_parallelism_threads()
    seen["inter"] = tf.config.threading.get_inter_op_parallelism_threads()
    seen["jit"] = tf.config.optimizer.get_jit()
    seen["xla_flags"] = os.environ.get("TF_XLA_FLAGS")
    print("RESULT " + json.dumps(seen))

common.import_tensorflow_quietly = spy
atexit.register(report)
train.run()
"""


def run_spied(*flags):
    done = subprocess.run([sys.executable, "-c", SPY, "--device=cpu", "--num_batches=1",
                           "--num_warmup_batches=0", *flags],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    line = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def test_cli_applies_threads_xla_and_mkl_environment_before_tensorflow_starts():
    seen = run_spied("--num_intra_threads=2", "--num_inter_threads=3", "--xla", "--mkl",
                     "--kmp_blocktime=7", "--kmp_affinity=compact", "--kmp_settings=0")
    assert seen["tensorflow_loaded_before"] is False
    assert seen["env"] == {"KMP_BLOCKTIME": "7", "KMP_SETTINGS": "0",
                           "KMP_AFFINITY": "compact", "OMP_NUM_THREADS": "2"}
    assert (seen["intra"], seen["inter"]) == (2, 3)
    assert seen["jit"] == "autoclustering"
    assert runtime.XLA_CPU_FLAG in seen["xla_flags"].split()
    # Auto-clustering really compiled part of the step on the CPU.
    assert {"_XlaCompile", "_XlaRun"} <= set(seen["ops"])


def test_cli_gives_two_cpu_towers_their_share_of_the_cores():
    from helpers.cli import run_cli
    from towertrain.config import machine
    done = run_cli("--model=trivial", "--device=cpu", "--num_gpus=2", "--num_batches=1",
                   "--num_warmup_batches=0", check=True)
    cores = machine.available_cores()
    # The header reads the pool back from TensorFlow: the share reached it.
    assert re.search(r"^Threads:\s+intra-op %d per process \(%d cores / 2 towers; "
                     % (max(1, cores // 2), cores), done.stdout, re.MULTILINE), done.stdout


def test_defaults_leave_tensorflow_alone(monkeypatch):
    def refuse(*args):
        raise AssertionError(f"set {args} with default flags")
    for name in ("set_intra_op_parallelism_threads", "set_inter_op_parallelism_threads"):
        monkeypatch.setattr(tf.config.threading, name, refuse)
    monkeypatch.setattr(tf.config.optimizer, "set_jit", refuse)
    monkeypatch.setattr(tf.config.experimental, "set_memory_growth", refuse)
    params = Params(model="trivial", device="cpu")
    assert environment(params) == {}
    configure(params, gpus=["GPU:0"])
    assert runtime.sync_after_step(runtime_of(params)) is None


def _cluster(*workers, task=0):
    from towertrain.config.cluster_spec import Cluster
    return Cluster(tuple(workers), task)


def test_workers_sharing_a_host_count_loopback_names_as_one_host():
    assert _cluster("127.0.0.1:1", "localhost:2", "[::1]:3").workers_on_this_host() == 3
    slurm = ("node1:8888", "node1:8889", "node2:8888")
    assert [_cluster(*slurm, task=t).workers_on_this_host() for t in range(3)] == [2, 2, 1]
    from towertrain.config.cluster_spec import SINGLE
    assert SINGLE.workers_on_this_host() == 1


@pytest.mark.parametrize("flags, workers, cores, threads", [
    ({}, ("127.0.0.1:1", "127.0.0.1:2"), 2, 1),  # 2 workers on 2 cores: 1 each
    ({}, ("localhost:1", "127.0.0.1:2", "localhost:3", "localhost:4"), 16, 4),
    ({}, ("localhost:1", "localhost:2", "localhost:3"), 2, 1),  # never 0
    ({}, ("a:1", "b:1"), 2, None),  # a host each: TensorFlow's own choice
    ({"num_intra_threads": 3}, ("127.0.0.1:1", "127.0.0.1:2"), 2, 3),  # the flag wins
    ({"device": "gpu"}, ("127.0.0.1:1", "127.0.0.1:2"), 2, 1),  # GPUs: tf_cnn's 1
])
def test_workers_sharing_a_hosts_cores_split_them_unless_told(flags, workers, cores,
                                                              threads):
    params = Params(**{"model": "trivial", "device": "cpu", **flags})
    assert intra_op_threads(params, _cluster(*workers), cores=cores) == threads


@pytest.mark.parametrize("flags, workers, cores, towers, threads", [
    ({}, ("127.0.0.1:1",), 2, 2, 1),  # 2 towers on 2 cores: 1 each (1.15x measured)
    ({}, ("127.0.0.1:1",), 2, 8, 1),  # never 0
    ({}, ("127.0.0.1:1",), 16, 4, 4),
    ({}, ("127.0.0.1:1",), 16, 1, None),  # a lone tower: TensorFlow's own choice
    ({}, ("127.0.0.1:1", "127.0.0.1:2"), 16, 2, 4),  # 2 workers x 2 towers share 16
    ({}, ("a:1", "b:1"), 16, 2, 8),  # a host each: this worker's towers only
    ({"num_intra_threads": 0}, ("127.0.0.1:1",), 2, 2, 0),  # 0: TensorFlow picks
    ({"device": "gpu"}, ("127.0.0.1:1",), 16, 4, 1),  # GPUs: tf_cnn's 1
])
def test_towers_sharing_the_cores_split_them_unless_told(flags, workers, cores, towers,
                                                         threads):
    params = Params(**{"model": "trivial", "device": "cpu", **flags})
    assert intra_op_threads(params, _cluster(*workers), cores, towers) == threads


def test_towers_of_one_process_set_the_pool_and_say_why(monkeypatch):
    set_to = []
    monkeypatch.setattr(tf.config.threading, "set_intra_op_parallelism_threads",
                        set_to.append)
    # TensorFlow's own pool as in a fresh process (0: its default), whatever
    # an earlier test of this process set it to.
    monkeypatch.setattr(tf.config.threading, "get_intra_op_parallelism_threads", lambda: 0)
    params = Params(model="trivial", device="cpu", num_gpus=2)
    planned = runtime_of(params, cores=2)
    assert planned.intra_threads_why == "2 cores / 2 towers; --num_intra_threads sets it"
    runtime.configure(planned)
    assert set_to == [1]
    lone = runtime_of(Params(model="trivial", device="cpu", num_gpus=1), cores=2)
    assert (lone.num_intra_threads, lone.intra_threads_why) == (None, None)


def test_cluster_of_colocated_workers_sets_the_pool_before_tensorflow_starts(monkeypatch):
    set_to = []
    monkeypatch.setattr(tf.config.threading, "set_intra_op_parallelism_threads",
                        set_to.append)
    params = Params(model="trivial", device="cpu", variable_update="collective_all_reduce",
                    worker_hosts="127.0.0.1:1,127.0.0.1:2", task_index=1)
    configure(params, cores=8)  # the cluster from the flags, as the CLI plans it
    assert set_to == [4]


def test_mkl_environment_after_tensorflow_import_is_an_error():
    # This process imported TensorFlow: the OpenMP runtime has read its environment.
    params = Params(model="trivial", device="cpu", mkl=True, kmp_blocktime=123456)
    with pytest.raises(ParamsError, match=r"^--mkl: KMP_BLOCKTIME=123456"):
        runtime.set_environment(environment(params))


def test_thread_counts_after_tensorflow_started_are_an_error():
    tf.constant(1.0) + 1.0  # the runtime is up
    current = tf.config.threading.get_inter_op_parallelism_threads()
    with pytest.raises(ParamsError, match=r"^--num_inter_threads=\d+: TensorFlow already"):
        Trainer(Params(model="trivial", device="cpu", num_inter_threads=current + 5))


@pytest.mark.parametrize("changes, explicit, message", [
    (dict(kmp_blocktime=5), True, "--kmp_blocktime=5: only applies with --mkl"),
    (dict(kmp_affinity="compact"), True, "--kmp_affinity=compact: only applies with --mkl"),
    (dict(num_intra_threads=-1), False, "--num_intra_threads=-1: must be >= 0"),
    (dict(allow_growth=True, device="cpu"), False, "--allow_growth=True: sets GPU memory"),
    (dict(gpu_indices="1,0", num_gpus=2, device="cpu"), False, "--gpu_indices=1,0: needs "
     "--device=gpu"),
    (dict(gpu_indices="0,0", num_gpus=2, device="gpu"), False, "--gpu_indices=0,0: lists a "
     "GPU twice"),
    (dict(gpu_indices="1", num_gpus=2, device="gpu"), False, "--gpu_indices=1: lists 1 GPU"),
    (dict(gpu_indices="a", device="gpu"), False, "--gpu_indices=a: must be comma-separated"),
])
def test_bad_runtime_flags_name_the_flag(changes, explicit, message):
    from towertrain.config import flags as flags_lib
    with pytest.raises(ParamsError) as err:
        params = Params(model="trivial", **changes)
        if explicit:  # a CLI check: the flag was given but its combination ignores it
            flags_lib.check_command_line(params, set(changes))
    assert str(err.value).startswith(message)


class _GrowthRecorder:
    def __init__(self):
        self.set = {}

    def get(self, gpu):
        return self.set.get(gpu, False)

    def put(self, gpu, value):
        self.set[gpu] = value


def test_allow_growth_sets_memory_growth_on_every_gpu(monkeypatch):
    recorder = _GrowthRecorder()
    monkeypatch.setattr(tf.config.experimental, "get_memory_growth", recorder.get)
    monkeypatch.setattr(tf.config.experimental, "set_memory_growth", recorder.put)
    params = Params(model="trivial", device="gpu", num_gpus=2, allow_growth=True)
    configure(params, gpus=["GPU:0", "GPU:1"])
    assert recorder.set == {"GPU:0": True, "GPU:1": True}
    configure(params.replace(allow_growth=None), gpus=["GPU:2"])
    assert "GPU:2" not in recorder.set  # unset: TensorFlow's default stays


def test_gpu_indices_put_towers_on_those_gpus_in_that_order():
    params = Params(model="trivial", device="gpu", num_gpus=2, batch_size=2,
                    variable_update="replicated", all_reduce_spec="ring", gpu_indices="1,0")
    trainer = Trainer(params, check_devices=False)  # traced for absent GPUs
    assert trainer.devices == ["/gpu:1", "/gpu:0"]
    # Tower k's forward and backward run on GPU gpu_indices[k].
    placed = {(op.name.split("/")[0] if op.name.startswith("tower_") else op.name.split("/")[1],
               op.device.upper()) for op in trainer.trace_step().graph.get_operations()
              if op.type == "MatMul" and "tower_" in op.name}
    assert placed == {("tower_0", "/DEVICE:GPU:1"), ("tower_1", "/DEVICE:GPU:0")}


@pytest.mark.parametrize("mode", [["--eval", "--train_dir=unused"], ["--forward_only"]])
def test_gpu_indices_choose_the_gpus_of_eval_and_forward_only_too(mode):
    from absl import flags
    from towertrain.commands import train
    from towertrain.config import flags as flags_lib
    flags_lib.define_flags()
    try:
        flags.FLAGS.unparse_flags()
        train.parse_flags(["towertrain", "--model=trivial", "--device=gpu", "--num_gpus=2",
                           "--gpu_indices=1,0", *mode])
        params = flags_lib.params_from_flags()
    finally:
        flags.FLAGS.unparse_flags()
    assert Trainer(params, check_devices=False).devices == ["/gpu:1", "/gpu:0"]


def test_gpu_indices_beyond_the_present_gpus_fail_at_device_setup(monkeypatch):
    from towertrain.engine.process import devices
    from towertrain.errors import DeviceError
    monkeypatch.setattr(devices, "num_physical_gpus", lambda: 2)
    with pytest.raises(DeviceError, match=r"^--gpu_indices=2,0: GPU 2 does not exist"):
        devices.tower_devices("gpu", 2, indices=[2, 0])


def test_sync_on_finish_waits_for_the_devices_after_every_step(monkeypatch):
    calls = []
    monkeypatch.setattr(tf.test.experimental, "sync_devices", lambda: calls.append(1))
    params = Params(model="trivial", device="cpu", num_batches=3, num_warmup_batches=1,
                    sync_on_finish=True)
    trainer = Trainer(params)
    trainer.train(write=lambda line: None)
    assert len(calls) == 4
    calls.clear()
    Trainer(params.replace(sync_on_finish=False)).train(write=lambda line: None)
    assert calls == []
