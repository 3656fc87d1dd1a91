"""GPU placement checked without a GPU: trace the step for /gpu:0..3 and inspect it."""
import re

import pytest

from helpers.graph_walks import variable_of
from towertrain import Params, Trainer
from towertrain.engine.step.graph_ops import all_operations

NUM_GPUS = 4
COMPUTE_OPS = {"Conv2D", "MatMul", "Conv2DBackpropFilter", "Conv2DBackpropInput",
               "FusedBatchNormV3", "FusedBatchNormGradV3", "BiasAdd"}
# Writes to a variable: Keras' optimizer ops and the fused kernels.
UPDATE_OPS = ("AssignSubVariableOp", "AssignAddVariableOp", "ResourceApplyGradientDescent",
              "ResourceApplyKerasMomentum")


def traced_graph(model="trivial", **overrides):
    params = Params(model=model, device="gpu", num_gpus=NUM_GPUS, batch_size=2,
                    **overrides)
    trainer = Trainer(params, check_devices=False)
    return trainer, trainer.trace_step().graph


def device_index(op, kind):
    match = re.search(rf"{kind}:(\d+)$", op.device, re.IGNORECASE)
    return int(match.group(1)) if match else None


@pytest.fixture(scope="module")
def replicated_nccl():
    return traced_graph(model="resnet20", variable_update="replicated",
                        all_reduce_spec="nccl")


def test_replicated_nccl_has_one_all_reduce_per_gpu(replicated_nccl):
    _, graph = replicated_nccl
    nccl = [op for op in all_operations(graph) if op.type == "NcclAllReduce"]
    assert sorted(device_index(op, "GPU") for op in nccl) == list(range(NUM_GPUS))


def test_each_towers_ops_sit_on_its_gpu(replicated_nccl):
    _, graph = replicated_nccl
    seen = set()
    for op in all_operations(graph):
        tower = re.match(r"tower_(\d+)/", op.name)
        if tower and op.type in COMPUTE_OPS:
            assert device_index(op, "GPU") == int(tower.group(1)), (op.name, op.device)
            seen.add(int(tower.group(1)))
    assert seen == set(range(NUM_GPUS))


def test_default_data_format_on_gpu_is_nchw(replicated_nccl):
    trainer, graph = replicated_nccl
    assert trainer.data_format == "NCHW"
    convs = [op for op in all_operations(graph) if op.type == "Conv2D"]
    assert convs and all(op.get_attr("data_format") == b"NCHW" for op in convs)


def test_replicated_updates_each_copy_on_its_own_gpu(replicated_nccl):
    trainer, graph = replicated_nccl
    num_vars = len(trainer.model.trainable_variables)
    copies = [v for copy in trainer.variables.trainable_copies() for v in copy]
    updates = [op for op in all_operations(graph)
               if op.type in UPDATE_OPS and variable_of(op.inputs[0], copies) is not None]
    counts = [sum(device_index(op, "GPU") == g for op in updates) for g in range(NUM_GPUS)]
    assert counts == [num_vars] * NUM_GPUS


def test_parameter_server_on_cpu_keeps_variables_and_updates_on_cpu0():
    trainer, graph = traced_graph(variable_update="parameter_server",
                                  local_parameter_device="cpu")
    trainable, _ = trainer.variables.primary_variables()
    assert all(v.value.device.endswith("CPU:0") for v in trainable)
    updates = [op for op in all_operations(graph)
               if op.type in UPDATE_OPS and variable_of(op.inputs[0], trainable) is not None]
    assert len(updates) == len(trainable)
    assert all(device_index(op, "CPU") == 0 for op in updates)
    # Gradients are summed where the variables live.
    sums = [op for op in all_operations(graph)
            if op.type == "AddN" and "aggregate/" in op.name]
    assert sums and all(device_index(op, "CPU") == 0 for op in sums)


def test_parameter_server_on_gpu_spreads_variables_over_gpus():
    trainer, _ = traced_graph(variable_update="parameter_server",
                              local_parameter_device="gpu")
    placement = trainer.variables.placement
    assert set(placement) == {f"/gpu:{i}" for i in range(NUM_GPUS)}
    sizes = {}
    for device, variable in zip(placement, trainer.model.trainable_variables):
        sizes[device] = sizes.get(device, 0) + variable.numpy().size
    # Greedy largest-first keeps the load within one largest variable.
    largest = max(v.numpy().size for v in trainer.model.trainable_variables)
    assert max(sizes.values()) - min(sizes.values()) <= largest


def test_psgpu_sums_on_gpu0():
    _, graph = traced_graph(variable_update="replicated", all_reduce_spec="psgpu")
    sums = [op for op in all_operations(graph)
            if op.type == "AddN" and "allreduce/" in op.name]
    assert sums and all(device_index(op, "GPU") == 0 for op in sums)
