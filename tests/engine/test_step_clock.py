"""The step's clock in a traced GPU step (engine/step/step_clock.py): every
timestamp on the CPU (Timestamp has no GPU kernel), and the time the update
was done taken once, on the CPU, after every device's update: its control
inputs are each device's update (its branch's flag), and nothing else
orders it but its own variable. (The input-wait share it measures, staged
and not: tests/input/test_input_wait.py.)"""
from helpers import kernel_coverage
from towertrain import Params, Trainer
from towertrain.engine.process import devices as devices_lib
from towertrain.engine.step import accumulate


def _graph_def(phase=None, **overrides):
    devices_lib.ensure_logical_cpus(2)
    params = Params(model="trivial", device="gpu", num_gpus=2, batch_size=2, **overrides)
    trainer = Trainer(params, check_devices=False)
    graph_def = trainer.trace_step(phase).graph.as_graph_def()
    trainer.close()
    return graph_def


def _clock_call(graph_def):
    """The step's call that takes the update's time: one, on the CPU."""
    library = {f.signature.name: f for f in graph_def.library.function}
    calls = [node for node in graph_def.node if node.op == "StatefulPartitionedCall"
             and any(n.op == "Timestamp" for n in library[node.attr["f"].func.name].node_def)]
    assert len(calls) == 1, [c.name for c in calls]
    assert calls[0].device == "/device:CPU:0", calls[0].device
    return calls[0]


def _waits_for(graph_def, call):
    """The nodes the call's control inputs read (through a flag's Identity)."""
    nodes = {node.name: node for node in graph_def.node}
    waited = [nodes[name[1:]] for name in call.input if name.startswith("^")]
    return [nodes[n.input[0].split(":")[0]] if n.op == "Identity" else n for n in waited]


def _assert_every_timestamp_on_the_cpu(graph_def):
    stamps = [(node.name, where, device)
              for node, where, device in kernel_coverage.placed_nodes(graph_def)
              if node.op == "Timestamp"]
    assert stamps and all(device == "CPU" for _, _, device in stamps), stamps


def test_the_update_time_is_taken_on_the_cpu_after_every_devices_update():
    graph_def = _graph_def(variable_update="replicated", all_reduce_spec="psgpu",
                           staging_depth=1)
    _assert_every_timestamp_on_the_cpu(graph_def)
    waited = _waits_for(graph_def, _clock_call(graph_def))
    # Each device's update branch, and nothing else (not the staging put).
    assert sorted((node.op, node.device) for node in waited) == [
        ("If", "/device:GPU:0"), ("If", "/device:GPU:1")]
    library = {f.signature.name: f for f in graph_def.library.function}
    for branch in waited:
        body = library[branch.attr["then_branch"].func.name].node_def
        assert any(n.op.startswith("ResourceApply") for n in body), branch.name
        assert not any(n.op == "Timestamp" for n in body), branch.name


def test_one_update_decision_on_the_cpu_is_timed_after_it():
    # parameter_server: one CPU branch applies every update.
    graph_def = _graph_def(variable_update="parameter_server", local_parameter_device="gpu")
    _assert_every_timestamp_on_the_cpu(graph_def)
    waited = _waits_for(graph_def, _clock_call(graph_def))
    assert [(node.op, node.device) for node in waited] == [("If", "/device:CPU:0")]


def test_a_micro_batch_is_timed_after_each_devices_accumulation():
    graph_def = _graph_def(accumulate.ACCUMULATE, variable_update="replicated",
                           all_reduce_spec="psgpu", gradient_accumulation_steps=2)
    _assert_every_timestamp_on_the_cpu(graph_def)
    waited = _waits_for(graph_def, _clock_call(graph_def))
    gpu_adds = {node.device for node in waited if node.op == "AssignAddVariableOp"}
    assert gpu_adds >= {"/device:GPU:0", "/device:GPU:1"}, waited
