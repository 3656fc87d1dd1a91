"""Staging order, proven on the traced graph (docs/data.md, Staging).

The claim: each step takes the batch staged by the previous step, then stages
the next one, and the towers compute on what was taken. In the graph of the
step that means: every `Unstage` comes before (is an ancestor of) its device's
`Stage`, no `Stage` comes before any `Unstage`, and no tower op depends on a
`Stage` (through data or control edges), so the next batch's fetch and copy
can overlap the compute. Staging a batch first and then taking one would still
train on the same batches in the same order, so only the graph can tell.
"""
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.input_pipeline import from_arrays

IMAGE_SHAPE = (4, 4, 3)


def tiny_model():
    return keras.Sequential([
        keras.Input(IMAGE_SHAPE),
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(5, name="logits"),
    ], name="staging_tiny")


def traced(device, num_devices, global_batch=8, staging_depth=1):
    rng = np.random.default_rng(0)
    images = rng.standard_normal((4 * global_batch,) + IMAGE_SHAPE).astype(np.float32)
    labels = rng.integers(0, 5, 4 * global_batch).astype(np.int32)
    params = Params(device=device, num_gpus=num_devices,
                    variable_update="replicated", staging_depth=staging_depth)
    trainer = Trainer(params, model=tiny_model(),
                      input_source=from_arrays(images, labels, global_batch),
                      check_devices=(device == "cpu"))
    return trainer.trace_step().graph


def device_index(op):
    spec = tf.DeviceSpec.from_string(op.device)
    return spec.device_index


def ancestors(op, control=True, _memo=None):
    """Every op `op` depends on through data edges (and control edges if asked)."""
    memo = {} if _memo is None else _memo
    key = (op, control)
    if key in memo:
        return memo[key]
    found = set()
    stack = [op]
    while stack:
        current = stack.pop()
        parents = [t.op for t in current.inputs]
        if control:
            parents += list(current.control_inputs)
        for parent in parents:
            if parent not in found:
                found.add(parent)
                stack.append(parent)
    memo[key] = found
    return found


def tower_ops(graph):
    out = {}
    for op in graph.get_operations():
        match = re.match(r"tower_(\d+)/", op.name)
        if match:
            out.setdefault(int(match.group(1)), []).append(op)
    return out


CASES = [("cpu", 2), ("cpu", 3), ("gpu", 4)]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}x{c[1]}")
def graph_case(request):
    device, n = request.param
    return device, n, traced(device, n)


def test_one_stage_and_one_unstage_per_device(graph_case):
    _, n, graph = graph_case
    ops = graph.get_operations()
    stages = sorted(device_index(op) for op in ops if op.type == "Stage")
    unstages = sorted(device_index(op) for op in ops if op.type == "Unstage")
    assert stages == list(range(n))
    assert unstages == list(range(n))


def test_no_tower_op_depends_on_a_stage(graph_case):
    _, n, graph = graph_case
    stages = {op for op in graph.get_operations() if op.type == "Stage"}
    towers = tower_ops(graph)
    assert sorted(towers) == list(range(n))
    for tower, ops in towers.items():
        for op in ops:
            bad = ancestors(op) & stages
            assert not bad, (f"tower {tower} op {op.name} waits for the put of the next "
                             f"batch: {sorted(s.name for s in bad)}")


def test_each_unstage_precedes_its_stage(graph_case):
    _, n, graph = graph_case
    ops = graph.get_operations()
    stage = {device_index(op): op for op in ops if op.type == "Stage"}
    unstage = {device_index(op): op for op in ops if op.type == "Unstage"}
    for d in range(n):
        assert unstage[d] in ancestors(stage[d]), f"device {d}: the put does not follow the get"
        for other in unstage.values():  # no get waits for any put
            assert stage[d] not in ancestors(other), (stage[d].name, other.name)


def test_each_tower_reads_only_its_own_devices_staged_batch(graph_case):
    _, n, graph = graph_case
    unstages = {op for op in graph.get_operations() if op.type == "Unstage"}
    for tower, ops in tower_ops(graph).items():
        fed_by = set()
        for op in ops:
            fed_by |= ancestors(op, control=False) & unstages
        assert [device_index(op) for op in fed_by] == [tower]


def test_staging_off_has_no_staging_ops():
    graph = traced("cpu", 2, staging_depth=0)
    types = {op.type for op in graph.get_operations()}
    assert not types & {"Stage", "Unstage"}
