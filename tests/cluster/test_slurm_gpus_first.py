"""A Slurm task sharing its node sets its own CUDA_VISIBLE_DEVICES before
anything asks TensorFlow for devices: CUDA reads the variable once, at the
first probe, so a share written after it leaves every task every GPU.

TensorFlow's device calls are replaced by a recorder that stands in for CUDA:
at its first call it takes the GPUs CUDA_VISIBLE_DEVICES names then, and
keeps them, as CUDA does. No GPU is needed."""
import os

import pytest
from tensorflow.python.eager import context

from towertrain import plan
from towertrain.config import gpu_share, machine, slurm_gpus
from towertrain.config.params import Params
from towertrain.plan import cluster as resolvers

# Task 1 of 2, both on one node that holds GPUs 0-3.
SLURM_NODE = {"SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2",
              "SLURM_STEP_NODELIST": "127.0.0.1", "SLURM_STEP_TASKS_PER_NODE": "2"}
DEVICE_CALLS = ("list_physical_devices", "list_logical_devices", "get_visible_devices",
                "set_visible_devices", "get_logical_device_configuration",
                "set_logical_device_configuration", "get_memory_growth", "set_memory_growth")


class RecordingEnviron(dict):
    """os.environ that records each write of CUDA_VISIBLE_DEVICES."""

    def __init__(self, values, events):
        super().__init__(values)
        self.events = events

    def __setitem__(self, name, value):
        if name == gpu_share.VISIBLE:
            self.events.append(("set", value))
        super().__setitem__(name, value)


@pytest.fixture
def node(monkeypatch):
    """Task 1 of a node's 2 Slurm tasks, with TensorFlow's device calls
    recorded (events) and answered from the GPUs visible at the first call."""
    events, seen = [], {}
    values = {k: v for k, v in os.environ.items()
              if not k.startswith("SLURM_") and k != "TF_CONFIG"}
    values.update(SLURM_NODE, CUDA_VISIBLE_DEVICES="0,1,2,3")
    environ = RecordingEnviron(values, events)
    monkeypatch.setattr(os, "environ", environ)

    def recorder(name):
        def call(self, device_type=None, *args, **kwargs):
            events.append(("probe", name))
            if "gpus" not in seen:  # CUDA starts: it reads the variable now, once
                seen["gpus"] = [g for g in environ[gpu_share.VISIBLE].split(",") if g]
            if name == "list_physical_devices" and device_type == "GPU":
                return [context.PhysicalDevice(f"/physical_device:GPU:{i}", "GPU")
                        for i in range(len(seen["gpus"]))]
            return []
        return call

    for name in DEVICE_CALLS:
        monkeypatch.setattr(context.Context, name, recorder(name))
    # Each run below is a fresh process's: nothing probed or resolved yet.
    monkeypatch.setattr(resolvers, "_RESOLVED", {})
    monkeypatch.setattr(slurm_gpus, "_CLAIMED", {})
    machine.physical_gpus.cache_clear()
    yield environ, events, seen
    machine.physical_gpus.cache_clear()


@pytest.mark.parametrize("device", [None, "gpu"])
def test_a_slurm_task_of_two_per_node_sets_its_gpus_before_any_device_probe(node, device):
    environ, events, seen = node
    params = Params(model="trivial", device=device, num_gpus=2,
                    variable_update="collective_all_reduce", all_reduce_spec="psgpu/xring")
    layout = plan.lay_out(params)
    assert events[0] == ("set", "2,3"), events
    assert ("probe", "list_physical_devices") in events, events
    # Set once: the later Params and the cluster's resolution keep the share.
    assert [e for e in events if e[0] == "set"] == [("set", "2,3")], events
    assert environ[gpu_share.VISIBLE] == "2,3"
    assert seen["gpus"] == ["2", "3"]  # what CUDA would show this task
    assert machine.probe().gpus == 2
    assert layout.topology.device == "gpu"
    assert (layout.topology.cluster.task_index, layout.topology.cluster.num_workers) == (1, 2)
    params.replace(num_batches=5)
    assert environ[gpu_share.VISIBLE] == "2,3"


def test_a_cpu_run_and_srun_s_own_split_leave_the_variable_alone(node):
    environ, events, _ = node
    Params(model="trivial", device="cpu", num_gpus=2, variable_update="collective_all_reduce")
    environ["SLURM_GPUS_PER_TASK"] = "2"
    Params(model="trivial", num_gpus=2, variable_update="collective_all_reduce")
    assert not [e for e in events if e[0] == "set"], events
    assert environ[gpu_share.VISIBLE] == "0,1,2,3"
