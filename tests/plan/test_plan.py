"""The run plan as pure Python: the facts every part of a run receives, worked
out once from Params and the machine, the model and the input.

No TensorFlow here: test_plan_without_tensorflow.py runs this file in a
process where TensorFlow and Keras are never imported.
"""
import types

import pytest

from towertrain import plan
from towertrain.config.cluster_spec import SINGLE, Cluster
from towertrain.config.machine import Machine
from towertrain.config.params import Params
from towertrain.errors import ParamsError

CPU_MACHINE = Machine(gpus=0, cores=2)
GPU_MACHINE = Machine(gpus=8, cores=16)
# The registered defaults a plan reads of its model (towertrain.models' spec).
SPEC = types.SimpleNamespace(default_batch_size=32, default_learning_rate=0.005,
                             default_dataset="cifar10")


def run_plan(params, steps_per_epoch=None, global_batch=None, machine=CPU_MACHINE,
             cluster=SINGLE):
    layout = plan.lay_out(params, machine=machine, cluster=cluster, model_spec=SPEC)
    return plan.build(params, layout, plan.InputFacts(steps_per_epoch, global_batch))


def _user_run(tmp_path, **flags):
    """A user's run: 1,500 CIFAR-format examples, batches of 128 (12 per
    epoch), two global batches per update."""
    params = Params(model="trivial", device="cpu", batch_size=128, data_dir=str(tmp_path),
                    gradient_accumulation_steps=2, num_epochs=2, **flags)
    return run_plan(params, steps_per_epoch=12)


def test_eval_every_epoch_under_accumulation_runs_after_each_epochs_last_update(tmp_path):
    steps = _user_run(tmp_path, eval_during_training_every_n_epochs=1).steps
    assert (steps.batches_per_epoch, steps.updates_per_epoch, steps.total) == (12, 6, 12)
    schedule = steps.eval_schedule
    assert [s for s in range(1, 13) if schedule.due(s)] == [6, 12]
    assert schedule.describe() == "after steps 6, 12"


def test_eval_at_specified_epochs_under_accumulation_counts_updates(tmp_path):
    schedule = _user_run(tmp_path, eval_during_training_at_specified_epochs="0.5,1.5"
                         ).steps.eval_schedule
    assert [s for s in range(1, 13) if schedule.due(s)] == [3, 9, 12]


def test_learning_rate_epoch_boundaries_under_accumulation_count_updates(tmp_path):
    piecewise = _user_run(tmp_path, piecewise_learning_rate_schedule="0.1;1;0.01;1.5;0.001")
    rate = piecewise.recipe.learning_rate
    assert (rate.kind, rate.boundaries, rate.steps_per_epoch) == ("piecewise", (6, 9), 6)
    staircase = _user_run(tmp_path, num_epochs_per_decay=1, learning_rate_decay_factor=0.5,
                          num_learning_rate_warmup_epochs=0.5).recipe.learning_rate
    assert (staircase.decay_steps, staircase.warmup_steps) == (6, 3)
    # Linear scaling reads the examples of an update, not of a micro-batch.
    scaled = _user_run(tmp_path, scale_learning_rate="linear", base_batch_size=64,
                       init_learning_rate=0.1).recipe.learning_rate
    assert scaled.initial_value == pytest.approx(0.1 * 256 / 64)


def test_without_accumulation_an_update_is_a_batch(tmp_path):
    params = Params(model="trivial", device="cpu", batch_size=128, data_dir=str(tmp_path),
                    num_epochs=2, eval_during_training_every_n_epochs=1)
    steps = run_plan(params, steps_per_epoch=12).steps
    assert (steps.total, sorted(steps.eval_schedule.steps)) == (24, [12])


def test_epoch_runs_count_warmup_inside_the_epochs():
    params = Params(model="trivial", device="cpu", num_examples_per_epoch=320, batch_size=16,
                    num_gpus=2, num_epochs=3, num_warmup_batches=4)
    steps = run_plan(params).steps
    assert (steps.batches_per_epoch, steps.warmup, steps.timed, steps.total) == (10, 4, 26, 30)
    fixed = run_plan(Params(model="trivial", device="cpu", num_batches=7)).steps
    assert (fixed.warmup, fixed.timed, fixed.total, fixed.num_epochs) == (10, 7, 17, None)
    assert run_plan(Params(model="trivial", device="cpu")).steps.timed == 100


def test_checks_that_need_the_epoch_run_before_anything_is_built():
    with pytest.raises(ParamsError, match=r"^--num_epochs=2: needs the epoch length"):
        run_plan(Params(model="trivial", device="cpu", num_epochs=2))
    with pytest.raises(ParamsError, match=r"^--eval_during_training_every_n_epochs=1: needs "
                                          r"the epoch length"):
        run_plan(Params(model="trivial", device="cpu", eval_during_training_every_n_epochs=1))
    with pytest.raises(ParamsError, match=r"^--num_epochs_per_decay=1: needs the epoch"):
        run_plan(Params(model="trivial", device="cpu", num_epochs_per_decay=1,
                        learning_rate_decay_factor=0.5))
    with pytest.raises(ParamsError, match=r"^--num_examples_per_epoch=100: conflicts"):
        run_plan(Params(model="trivial", device="cpu", num_examples_per_epoch=100),
                 steps_per_epoch=7)
    with pytest.raises(ParamsError, match=r"^--distortions: synthetic data"):
        run_plan(Params(model="trivial", device="cpu", distortions=True))


def test_topology_names_the_towers_and_their_global_index():
    params = Params(model="trivial", device="gpu", num_gpus=2, variable_update="replicated")
    second = Cluster(("h:1", "h:2"), 1, source="flags")
    topology = run_plan(params, machine=GPU_MACHINE, cluster=second).topology
    assert topology.tower_devices == ("/gpu:0", "/gpu:1")
    assert topology.global_tower_indices == (2, 3)
    assert (topology.num_workers, topology.is_chief, topology.data_format) == (2, False, "NCHW")
    picked = Params(model="trivial", device="gpu", num_gpus=2, gpu_indices="3,1")
    assert run_plan(picked, machine=GPU_MACHINE).topology.tower_devices == ("/gpu:3", "/gpu:1")


def test_unset_device_and_data_format_follow_the_machine(monkeypatch):
    from towertrain.config import machine
    for gpus, expected in [((), ("cpu", "NHWC", "cpu")), (("GPU:0",), ("gpu", "NCHW", "gpu"))]:
        # Params checks an unset --device against the machine's GPU list.
        monkeypatch.setattr(machine, "physical_gpus", lambda gpus=gpus: gpus)
        params = Params(model="trivial")
        topology = run_plan(params, machine=machine.probe()).topology
        assert (topology.device, topology.data_format, topology.parameter_device) == expected
        assert not topology.device_given


def test_batches_at_every_level():
    params = Params(model="trivial", device="cpu", num_gpus=2, eval_batch_size=5,
                    gradient_accumulation_steps=3)
    batches = run_plan(params).batches
    assert (batches.per_device, batches.per_process, batches.global_batch) == (32, 64, 64)
    assert (batches.eval_per_device, batches.per_update) == (5, 192)
    # An input that sets its own global batch decides it.
    assert run_plan(params, global_batch=48).batches.global_batch == 48


def test_exchange_defaults_by_device():
    replicated = Params(model="trivial", device="cpu", num_gpus=2,
                        variable_update="replicated")
    assert run_plan(replicated).exchange.all_reduce_spec == "pscpu"
    on_gpu = run_plan(replicated.replace(device="gpu", compact_gradient_transfer=True),
                      machine=GPU_MACHINE).exchange
    assert (on_gpu.all_reduce_spec, on_gpu.compact_transfer_dtype) == ("nccl", "float16")
    collective = Params(model="trivial", device="cpu", variable_update="collective_all_reduce")
    assert run_plan(collective).exchange.all_reduce_spec == "pscpu/xring"
    assert run_plan(Params(model="trivial", device="cpu")).exchange.all_reduce_spec is None


def test_runtime_splits_a_hosts_cores_among_its_workers():
    params = Params(model="trivial", device="cpu", variable_update="collective_all_reduce",
                    worker_hosts="127.0.0.1:1,127.0.0.1:2")
    colocated = Cluster(("127.0.0.1:1", "127.0.0.1:2"), 0, source="flags")
    runtime = run_plan(params, machine=Machine(gpus=0, cores=8), cluster=colocated).runtime
    assert (runtime.num_intra_threads, runtime.intra_threads_explicit) == (4, False)
    assert runtime.intra_threads_why == ("8 cores / 2 workers on this host; "
                                         "--num_intra_threads sets it")
    alone = run_plan(Params(model="trivial", device="cpu")).runtime
    assert (alone.num_intra_threads, alone.intra_threads_why, alone.environment) == (
        None, None, ())


def test_describe_gives_the_headers_static_lines(tmp_path):
    lines = _user_run(tmp_path, eval_during_training_every_n_epochs=1).describe()
    assert lines["Batch size"] == ["128 global", "128 per device"]
    assert lines["Num batches"] == ["2 timed", "of 12 steps (2 epochs; the first 10 are "
                                    "warmup, untimed)"]
    assert lines["Devices"] == "['/cpu:0']"
    assert lines["Eval"] == "after steps 6, 12"
    assert lines["Accumulation"].startswith("2 batches per update (256 examples")
    assert "AllReduce" not in lines and "Cluster" not in lines


def test_the_plan_is_frozen():
    built = run_plan(Params(model="trivial", device="cpu"))
    with pytest.raises(AttributeError):
        built.steps.warmup = 3
    with pytest.raises(AttributeError):
        built.topology = None


def test_a_run_warms_up_at_most_all_but_its_last_step():
    from towertrain.plan.steps import warmup_of_run
    assert warmup_of_run(3, 0, 100) == 3
    assert warmup_of_run(10, 0, 5) == 4  # the last step is always timed
    assert warmup_of_run(10, 95, 100) == 4  # a resumed run warms up again
    assert warmup_of_run(2, 99, 100) == 0
    assert warmup_of_run(2, 100, 100) == 0  # nothing left to run


def test_the_header_counts_one_epoch_and_one_warmup_step_in_the_singular():
    from towertrain.plan import describe
    assert [describe.count(n, "epoch") for n in (1, 2, 0.5)] == [
        "1 epoch", "2 epochs", "0.5 epochs"]
    assert [describe.warmup_phrase(n) for n in (0, 1, 3)] == [
        "no warmup", "the first is warmup, untimed", "the first 3 are warmup, untimed"]
