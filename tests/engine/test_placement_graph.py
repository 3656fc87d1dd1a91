"""Placement claims proven on the traced step's graph (docs/architecture.md).

No GPU is needed: the step is traced for /gpu:0..3 and the op device strings
are read from the concrete function, including the graphs of functions nested
in it (a tf.cond branch). Where soft placement would hide a variable put on a
wrong device (an eager variable on an absent /gpu:3 silently lands on the
CPU), the run uses logical CPU devices with soft placement off.

- The global batch is sliced on the CPU; device i receives only slice i.
- parameter_server, --local_parameter_device=cpu: variables, gradient sums and
  updates on /cpu:0. With gpu: variables spread largest-first onto the least
  loaded GPU, each variable's gradients summed and applied on its GPU.
- ring: chunk c's partial sum after hop s sits on device (c + s) % n, each hop
  adds the holder's own piece and takes the partial from the previous device;
  the all-gather copies travel the ring to every device.
"""
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.input_pipeline import from_arrays

from helpers.gpu_graph import NUM_GPUS, gpu_trainer, ps_input, ps_model
from helpers.graph_walks import (all_ops, captured_object, data_ancestors, place,  # noqa: F401
                                 updates_by_variable, variable_of)



# Graph helpers ---------------------------------------------------------------











# Input slicing ---------------------------------------------------------------

IMAGE_SHAPE = (4, 4, 3)


def tiny_model():
    return keras.Sequential([
        keras.Input(IMAGE_SHAPE),
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(5, name="logits"),
    ], name="placement_tiny")


def array_input(global_batch, num_epochs=None):
    rng = np.random.default_rng(0)
    images = rng.standard_normal((3 * global_batch + 1,) + IMAGE_SHAPE).astype(np.float32)
    labels = rng.integers(0, 5, len(images)).astype(np.int32)
    return from_arrays(images, labels, global_batch, num_epochs=num_epochs)




@pytest.mark.parametrize("staging_depth", [1, 0], ids=["staged", "unstaged"])
@pytest.mark.parametrize("num_epochs", [None, 1], ids=["static_batch", "partial_batch"])
def test_global_batch_is_sliced_on_cpu_and_each_gpu_gets_only_its_slice(staging_depth,
                                                                        num_epochs):
    trainer = gpu_trainer(tiny_model(), array_input(10, num_epochs),
                          staging_depth=staging_depth, num_epochs=num_epochs)
    ops = trainer.trace_step().graph.get_operations()
    fetch = [op for op in ops if op.type == "IteratorGetNext"]
    assert len(fetch) == 1 and place(fetch[0]) == ("CPU", 0)
    after_fetch = [op for op in ops if op.type in ("Split", "SplitV")
                   and fetch[0] in data_ancestors(op)]
    # The input's slicing: the first splits after the fetch (the towers' and
    # the all-reduce's splits come after them).
    splits = [op for op in after_fetch if not set(after_fetch) & data_ancestors(op)]
    assert len(splits) == 2  # images, labels
    for split in splits:
        assert place(split) == ("CPU", 0), f"{split.name} slices on {split.device}"
        assert len(split.outputs) == NUM_GPUS
        for index, output in enumerate(split.outputs):
            consumers = output.consumers()
            assert consumers, f"slice {index} is not used"
            for consumer in consumers:  # the copy of slice `index` onto its device
                assert place(consumer) == ("GPU", index), (split.name, index,
                                                           consumer.name, consumer.device)
    # Everything between the fetch and the per-device copies (sizes, splits)
    # runs on the CPU.
    copies = {c for s in splits for out in s.outputs for c in out.consumers()}
    between = set()
    for copy in copies:
        between |= {op for op in data_ancestors(copy) if fetch[0] in data_ancestors(op)}
    assert set(splits) <= between
    for op in between:
        assert place(op) == ("CPU", 0), (op.name, op.type, op.device)


# parameter_server -------------------------------------------------------------





def greedy(sizes, num_devices):
    """docs: largest variable first onto the least-loaded device."""
    load = [0] * num_devices
    out = [None] * len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        target = min(range(num_devices), key=lambda d: load[d])
        out[i] = target
        load[target] += sizes[i]
    return out




def gradient_sums(update, variable, num_towers):
    """The AddN ops among an update's inputs that sum the towers' gradients."""
    return [op for op in data_ancestors(update) if op.type == "AddN"
            and len(op.inputs) == num_towers and op.outputs[0].shape == variable.shape]


def test_parameter_server_gpu_spreads_variables_sums_and_updates_largest_first():
    trainer = gpu_trainer(ps_model(), ps_input(), variable_update="parameter_server",
                          local_parameter_device="gpu")
    graph = trainer.trace_step().graph
    trainable, _ = trainer.variables.primary_variables()
    sizes = [math.prod(v.shape) for v in trainable]
    assert sorted(sizes) == [3, 4, 5, 12, 20, 50]
    expected = greedy(sizes, NUM_GPUS)
    assert sorted(set(expected)) == list(range(NUM_GPUS))
    updates = updates_by_variable(graph, trainable)
    assert sorted(updates) == list(range(len(trainable))), "every variable is updated"
    for index, ops in updates.items():
        for op in ops:
            assert place(op) == ("GPU", expected[index]), (trainable[index].path, op.name,
                                                           op.device, expected[index])
        sums = [s for op in ops for s in gradient_sums(op, trainable[index], NUM_GPUS)]
        assert sums, f"no gradient sum feeds {trainable[index].path}'s update"
        for s in sums:
            assert place(s) == ("GPU", expected[index]), (trainable[index].path, s.name,
                                                          s.device)


def test_parameter_server_cpu_keeps_sums_and_updates_on_cpu0_in_a_gpu_graph():
    trainer = gpu_trainer(ps_model(), ps_input(), variable_update="parameter_server",
                          local_parameter_device="cpu")
    graph = trainer.trace_step().graph
    trainable, _ = trainer.variables.primary_variables()
    updates = updates_by_variable(graph, trainable)
    assert sorted(updates) == list(range(len(trainable)))
    for index, ops in updates.items():
        for op in ops:
            assert place(op) == ("CPU", 0), (op.name, op.device)
            sums = gradient_sums(op, trainable[index], NUM_GPUS)
            assert sums and all(place(s) == ("CPU", 0) for s in sums), \
                [(s.name, s.device) for s in sums]


@pytest.fixture
def soft_placement_off():
    """Soft placement would move a variable meant for an absent device to the
    CPU without a word; off, such a variable fails to be created."""
    before = tf.config.get_soft_device_placement()
    tf.config.set_soft_device_placement(False)
    try:
        yield
    finally:
        tf.config.set_soft_device_placement(before)


@pytest.mark.parametrize("optimizer", ["sgd", "momentum"])
def test_parameter_server_cpu_variables_and_slots_live_on_cpu0(soft_placement_off,
                                                               optimizer):
    params = Params(device="cpu", num_gpus=NUM_GPUS,
                    variable_update="parameter_server", local_parameter_device="cpu",
                    optimizer=optimizer)
    trainer = Trainer(params, model=ps_model(), input_source=ps_input())
    assert not tf.config.get_soft_device_placement()
    trainable, non_trainable = trainer.variables.primary_variables()
    for variable in list(trainable) + list(non_trainable):
        assert place_of_variable(variable) == ("CPU", 0), (variable.path,
                                                          variable.value.device)
    for opt in trainer.variables.optimizers():
        for variable in opt.variables:
            assert place_of_variable(variable) == ("CPU", 0), (variable.path,
                                                              variable.value.device)
    loss = trainer.step()
    assert np.isfinite(float(getattr(loss, "loss", loss)))
    # The step's updates and gradient sums, too.
    updates = updates_by_variable(trainer.trace_step().graph, trainable)
    assert sorted(updates) == list(range(len(trainable)))
    for index, ops in updates.items():
        for op in ops:
            assert place(op) == ("CPU", 0), (op.name, op.device)
            assert all(place(s) == ("CPU", 0)
                       for s in gradient_sums(op, trainable[index], NUM_GPUS))


def place_of_variable(variable):
    spec = tf.DeviceSpec.from_string(variable.value.device)
    return spec.device_type.upper(), spec.device_index


# ring all-reduce ---------------------------------------------------------------

def ring_model():
    return keras.Sequential([
        keras.Input((1, 1, 6)),
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(3, name="logits"),
    ], name="ring_tiny")


def ring_input():
    rng = np.random.default_rng(2)
    images = rng.standard_normal((16, 1, 1, 6)).astype(np.float32)
    return from_arrays(images, rng.integers(0, 3, 16).astype(np.int32), 8)


@pytest.mark.parametrize("device,num_devices", [("gpu", 4), ("gpu", 3), ("cpu", 4)])
def test_ring_hops_run_on_the_ring_positions(device, num_devices):
    params = Params(device=device, num_gpus=num_devices,
                    variable_update="replicated", all_reduce_spec="ring")
    trainer = Trainer(params, model=ring_model(), input_source=ring_input(),
                      check_devices=device == "cpu")
    kind = device.upper()
    ops = all_ops(trainer.trace_step().graph)
    n = num_devices

    def is_chunk(tensor):
        return tensor.op.type in ("Split", "SplitV") and len(tensor.op.outputs) == n

    adds = [op for op in ops if op.type in ("AddV2", "Add")
            and any(is_chunk(t) for t in op.inputs)]
    assert len(adds) == n * (n - 1), f"{len(adds)} ring adds, expected {n * (n - 1)}"
    hop_of, chunk_of = {}, {}

    def hop(op):  # 1 + hops of the partial it extends
        if op not in hop_of:
            partial = [t.op for t in op.inputs if t.op in adds]
            hop_of[op] = 1 + (hop(partial[0]) if partial else 0)
        return hop_of[op]

    seen = set()
    for add in adds:
        chunk_indexes = {t.value_index for t in add.inputs if is_chunk(t)}
        assert len(chunk_indexes) == 1, add.name
        c = chunk_indexes.pop()
        chunk_of[add] = c
        s = hop(add)
        holder = (c + s) % n
        assert place(add) == (kind, holder), (f"chunk {c} hop {s}: add on {add.device}, "
                                              f"expected {kind}:{holder}")
        # It adds the holder's own piece of chunk c ...
        own = [t for t in add.inputs if is_chunk(t) and place(t.op) == (kind, holder)]
        assert len(own) == 1, (add.name, [(t.op.name, t.op.device) for t in add.inputs])
        # ... to the partial sum from the previous ring position.
        partial = [t for t in add.inputs if t is not own[0]]
        assert len(partial) == 1 and place(partial[0].op) == (kind, (holder - 1) % n), \
            (add.name, partial[0].op.name, partial[0].op.device)
        seen.add((c, s))
    assert seen == {(c, s) for c in range(n) for s in range(1, n)}

    # All-gather: each device concatenates the n summed chunks in order, every
    # piece already on that device, each copy taken from the previous position.
    final = {add for add in adds if hop_of[add] == n - 1}
    copies, frontier = [], list(final)
    while frontier:
        for out in frontier.pop().outputs:
            for consumer in out.consumers():
                if consumer.type == "Identity" and consumer not in copies:
                    copies.append(consumer)
                    frontier.append(consumer)
    assert len(copies) == n * (n - 1)
    for copy in copies:
        kind_, index = place(copy)
        assert kind_ == kind
        assert place(copy.inputs[0].op) == (kind, (index - 1) % n), (copy.name, copy.device)

    def chunk_sum_of(op):
        return chunk_of[op] if op in final else chunk_sum_of(op.inputs[0].op)

    concats = [op for op in ops if op.type == "ConcatV2"
               and any(t.op in final or t.op in copies for t in op.inputs)]
    assert sorted(place(c)[1] for c in concats) == list(range(n))
    for concat in concats:
        pieces = [t.op for t in concat.inputs[:-1]]  # the last input is the axis
        assert [chunk_sum_of(p) for p in pieces] == list(range(n))
        assert all(place(p) == place(concat) for p in pieces), (
            concat.device, [(p.name, p.device) for p in pieces])
