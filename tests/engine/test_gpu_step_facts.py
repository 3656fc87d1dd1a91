"""The GPU step's facts (bench/gpu_step_facts.py), read from steps traced with
GPU device names: no host-synced update, one pack check per device, a lean
update, one statistics transfer per device; across workers no CPU collective
on an update's path, every group opened before step 1 in one order on every
worker, one local group per GPU."""
import pytest

import helpers.tiny_models  # noqa: F401 - registers ckpt_tiny (conv + batch norm)
from helpers import bench_scripts

GPUS = 8


@pytest.fixture(scope="module")
def facts():
    return bench_scripts.load("gpu_step_facts")


@pytest.fixture(scope="module")
def replicated(facts):
    return facts.replicated_facts("resnet20", GPUS)


def test_no_op_gathers_every_device_before_the_update(replicated):
    # Before: one If over every copy's variables and sums (resnet20 x 8: thousands of inputs).
    assert replicated["widest_op_inputs"] <= 1000, replicated["widest_op"]


def test_each_device_checks_each_pack_once(replicated):
    # One IsFinite per pack per device, plus each tower's loss check (unused
    # where the loss rides the last pack): not one per variable.
    assert replicated["is_finite_ops"] == GPUS * (replicated["packs"] + 1)


def test_the_step_is_lean_per_variable_and_device(replicated):
    # A fused apply per variable, the gradients and statistics cut from their
    # packs inside each device's branch, vectors never reshaped (before: 37.7).
    assert replicated["ops_per_variable_device"] <= 30


def test_the_statistics_reach_each_device_in_one_transfer(replicated):
    assert replicated["gpu_to_gpu_transfers_per_device"] == 1


@pytest.mark.parametrize("spec", ["collective", "nccl/xring", "psgpu/xring", "scatter/xring"])
def test_cluster_step_on_gpus(facts, spec):
    both = [facts.cluster_facts(spec, task, model="ckpt_tiny") for task in (0, 1)]
    for found in both:
        assert found["cpu_collectives_before_updates"] == []
        assert found["step_groups_not_opened"] == []
        assert found["multi_node_groups_opened"]  # None: not one total order
    assert both[0]["multi_node_groups_opened"] == both[1]["multi_node_groups_opened"]
    if spec == "scatter/xring":
        assert [f["local_groups_per_gpu"] for f in both] == [1, 1]
