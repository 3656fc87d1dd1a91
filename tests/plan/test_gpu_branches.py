"""The run plan's GPU branches, run on any machine with an injected machine
description (Machine(gpus=8)): the the docs' per-device defaults, each checked
on the GPU side as on the CPU side (the CPU side runs everywhere already)."""
from towertrain import Params
from towertrain.config.cluster_spec import Cluster
from towertrain.config.machine import Machine
from towertrain.engine.process import settings as plan_runtime

from helpers.plans import run_plan

GPU_MACHINE = Machine(gpus=8, cores=16)
COLOCATED = Cluster(("127.0.0.1:1", "127.0.0.1:2"), 0, source="flags")


def _collective(**kw):
    return Params(model="trivial", variable_update="collective_all_reduce",
                  worker_hosts="127.0.0.1:1,127.0.0.1:2", **kw)


def test_gpu_towers_get_one_intra_op_thread_even_when_workers_share_the_host():
    gpu = run_plan(_collective(device="gpu"), machine=GPU_MACHINE, cluster=COLOCATED).runtime
    assert (gpu.num_intra_threads, gpu.intra_threads_why) == (1, None)
    cpu = run_plan(_collective(device="cpu"), machine=GPU_MACHINE, cluster=COLOCATED).runtime
    assert cpu.num_intra_threads == 8 and cpu.intra_threads_why.startswith("16 cores / 2")
    given = run_plan(_collective(device="gpu", num_intra_threads=3), machine=GPU_MACHINE,
                     cluster=COLOCATED).runtime
    assert (given.num_intra_threads, given.intra_threads_explicit) == (3, True)


def test_the_exchange_defaults_per_device_and_mode():
    for mode, on_gpu, on_cpu in [("replicated", "nccl", "pscpu"),
                                 ("collective_all_reduce", "collective", "pscpu/xring"),
                                 ("parameter_server", None, None)]:
        params = Params(model="trivial", variable_update=mode, num_gpus=2)
        assert run_plan(params.replace(device="gpu"),
                        machine=GPU_MACHINE).exchange.all_reduce_spec == on_gpu, mode
        assert run_plan(params.replace(device="cpu"),
                        machine=GPU_MACHINE).exchange.all_reduce_spec == on_cpu, mode


def test_gpu_layout_and_devices():
    topology = run_plan(Params(model="trivial", device="gpu", num_gpus=2,
                               variable_update="parameter_server",
                               local_parameter_device="gpu"), machine=GPU_MACHINE).topology
    assert (topology.tower_devices, topology.data_format, topology.parameter_device) == (
        ("/gpu:0", "/gpu:1"), "NCHW", "gpu")
    given = run_plan(Params(model="trivial", device="gpu", data_format="NHWC"),
                     machine=GPU_MACHINE).topology
    assert given.data_format == "NHWC"


def test_xla_auto_clustering_flag_is_for_cpu_devices_only():
    for device, expected in [("gpu", {}), ("cpu", {"TF_XLA_FLAGS": plan_runtime.XLA_CPU_FLAG}),
                             (None, {"TF_XLA_FLAGS": plan_runtime.XLA_CPU_FLAG})]:
        assert plan_runtime.environment(xla=True, device=device, environ={}) == expected, device
