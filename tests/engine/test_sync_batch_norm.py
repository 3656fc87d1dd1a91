"""--sync_batch_norm: N towers with batch norm train exactly like serial
training on the whole global batch (uneven slices included); without the flag
they do not. The serial reference is stock Keras stepping one model.

Cost (each Trainer is a lockstep trace): the default suite runs the uneven
global batch 10 on 3 and 4 towers for both batch norms (the the docs' claim);
the even batch 12 on 3 towers runs the same code with equal slices and runs
only with TOWERTRAIN_FULL_SWEEP=1. The unsynchronized control run (showing
the data make the flag matter) is done once per batch norm, on 3 towers.
The tests that only read a trainer's graph or header share one."""
import re
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, ParamsError, Trainer
from towertrain.engine.step import lockstep
from towertrain.input_pipeline import from_arrays
from towertrain.models import FusedBatchNormalization

from helpers.serial_reference import keras_serial_steps
from helpers.sweep import FULL_SWEEP, full_sweep_only

STEPS = 3
LEARNING_RATE = 0.1
IMAGE_SHAPE = (5, 5, 2)
NUM_CLASSES = 3


def bn_model(batch_norm):
    """Conv -> batch norm -> relu -> dense -> batch norm: statistics feed the
    loss in two places, one of them 4-D, one 2-D (Keras' own layer). No biases
    before a batch norm: their true gradient is zero, so they would hold only
    rounding noise."""
    return keras.Sequential([
        keras.Input(IMAGE_SHAPE),
        keras.layers.Conv2D(4, 3, use_bias=False, name="conv"),
        batch_norm(name="bn_conv"),
        keras.layers.ReLU(name="relu"),
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(6, use_bias=False, name="hidden"),
        keras.layers.BatchNormalization(momentum=0.9, name="bn_hidden"),
        keras.layers.Dense(NUM_CLASSES, name="logits"),
    ], name="bn_net")


BATCH_NORMS = {
    "fused": lambda name: FusedBatchNormalization(momentum=0.9, name=name),
    "keras": lambda name: keras.layers.BatchNormalization(momentum=0.9, name=name),
}


def data(global_batch, seed=3):
    rng = np.random.default_rng(seed)
    # Shifted and scaled so each slice's statistics differ from the batch's.
    images = (rng.standard_normal((STEPS * global_batch,) + IMAGE_SHAPE) * 2 + 1).astype(
        np.float32)
    labels = rng.integers(0, NUM_CLASSES, STEPS * global_batch).astype(np.int32)
    return images, labels


def serial(initial, images, labels, global_batch, batch_norm, optimizer_name):
    """Plain Keras: one model stepping on each whole global batch."""
    model = bn_model(batch_norm)
    model.set_weights(initial)
    optimizer = (keras.optimizers.SGD(LEARNING_RATE, momentum=0.9)
                 if optimizer_name == "momentum" else keras.optimizers.SGD(LEARNING_RATE))
    return keras_serial_steps(model, optimizer, images, labels, global_batch, STEPS)


def train(num_devices, sync, images, labels, global_batch, batch_norm,
          variable_update="replicated", optimizer_name="sgd", all_reduce="pscpu"):
    keras.utils.set_random_seed(1)
    model = bn_model(batch_norm)
    initial = model.get_weights()
    params = Params(device="cpu", num_gpus=num_devices,
                    variable_update=variable_update, optimizer=optimizer_name,
                    all_reduce_spec=all_reduce if variable_update == "replicated" else None,
                    init_learning_rate=LEARNING_RATE, sync_batch_norm=sync)
    trainer = Trainer(params, model=model,
                      input_source=from_arrays(images, labels, global_batch))
    for _ in range(STEPS):
        trainer.step()
    return trainer, initial


def max_difference(trainer, reference):
    """Largest difference, relative to the reference's scale, over every
    variable of every copy (trainable and moving statistics)."""
    worst = 0.0
    expected_trainable = [v.numpy() for v in reference.trainable_variables]
    expected_stats = [v.numpy() for v in reference.non_trainable_variables]
    copies = (trainer.variables.trainable_copies()
              if hasattr(trainer.variables, "trainable_copies")
              else [trainer.variables.primary_variables()[0]])
    for copy in copies:
        for got, want in zip(copy, expected_trainable):
            worst = max(worst, np.abs(got.numpy() - want).max() / max(np.abs(want).max(), 1e-3))
    stats = trainer.variables.primary_variables()[1]
    for got, want in zip(stats, expected_stats):
        worst = max(worst, np.abs(got.numpy() - want).max() / max(np.abs(want).max(), 1e-3))
    return worst



@pytest.mark.parametrize("batch_norm", ["fused", "keras"])
@pytest.mark.parametrize("num_devices,global_batch", [
    pytest.param(3, 12, marks=full_sweep_only(
        "even slices: the uneven cases run the same code")),
    (3, 10), (4, 10)])
def test_synchronized_towers_equal_serial_training(num_devices, global_batch, batch_norm):
    images, labels = data(global_batch)
    trainer, initial = train(num_devices, True, images, labels, global_batch,
                             BATCH_NORMS[batch_norm])
    reference = serial(initial, images, labels, global_batch, BATCH_NORMS[batch_norm], "sgd")
    assert max_difference(trainer, reference) <= 1e-5
    copies = trainer.variables.trainable_copies()
    for copy in copies[1:]:  # replicas stay bit-identical
        for a, b in zip(copy, copies[0]):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    if num_devices == 4 and not FULL_SWEEP:
        return  # the control below runs on 3 towers (same data, same layers)
    # Without the flag each tower normalizes its own slice: not serial training.
    unsynced, _ = train(num_devices, False, images, labels, global_batch,
                        BATCH_NORMS[batch_norm])
    assert max_difference(unsynced, reference) > 1e-3


@pytest.mark.parametrize("variable_update,all_reduce,optimizer_name", [
    ("parameter_server", None, "momentum"), ("replicated", "ring", "momentum")])
def test_synchronized_towers_equal_serial_in_other_modes(variable_update, all_reduce,
                                                          optimizer_name):
    images, labels = data(9)
    trainer, initial = train(3, True, images, labels, 9, BATCH_NORMS["fused"],
                             variable_update, optimizer_name, all_reduce)
    reference = serial(initial, images, labels, 9, BATCH_NORMS["fused"], optimizer_name)
    assert max_difference(trainer, reference) <= 1e-5


def test_an_empty_slice_adds_nothing_to_the_statistics():
    # Global batch 3 on 4 towers: one slice is empty at every step.
    images, labels = data(3)
    trainer, initial = train(4, True, images, labels, 3, BATCH_NORMS["fused"])
    reference = serial(initial, images, labels, 3, BATCH_NORMS["fused"], "sgd")
    assert max_difference(trainer, reference) <= 1e-5


def test_a_slice_empty_at_run_time_runs_on_a_stand_in_that_counts_nothing():
    # 18 examples in batches of 8, 8 and 2 on 4 towers: the last step's
    # slices are 1, 1, 0, 0, sizes known only at run time, so the two empty
    # towers still meet every cross-tower point (on one zero example each,
    # weighed zero). Keras' batch norm after the dense layer, and the fused one
    # after the conv (oneDNN's conv passes an empty batch through unshaped).
    # Measured: 9.1e-7 (a last batch of 2 leaves each of its layers' variance
    # to 2 values: other draws come nearer the bound).
    images, labels = (array[:18] for array in data(8))
    keras.utils.set_random_seed(1)
    model = bn_model(BATCH_NORMS["fused"])
    initial = model.get_weights()
    params = Params(device="cpu", num_gpus=4, variable_update="replicated",
                    all_reduce_spec="pscpu", init_learning_rate=LEARNING_RATE,
                    optimizer="sgd", sync_batch_norm=True, num_epochs=1,
                    num_warmup_batches=0)
    trainer = Trainer(params, model=model, input_source=from_arrays(images, labels, 8))
    assert trainer.total_steps == STEPS
    for _ in range(STEPS):
        trainer.step()
    reference = serial(initial, images, labels, 8, BATCH_NORMS["fused"], "sgd")
    assert max_difference(trainer, reference) <= 1e-5


@pytest.fixture(scope="module")
def three_tower_trainer():
    """Read only: its traced step and its header."""
    images, labels = data(12)
    keras.utils.set_random_seed(1)
    params = Params(device="cpu", num_gpus=3, variable_update="replicated",
                    all_reduce_spec="pscpu", sync_batch_norm=True)
    return Trainer(params, model=bn_model(BATCH_NORMS["fused"]),
                   input_source=from_arrays(images, labels, 12))


def test_one_statistics_sum_per_layer_read_by_every_tower(three_tower_trainer):
    graph = three_tower_trainer.trace_step().graph
    sums = [op for op in graph.get_operations()
            if "cross_tower_sum" in op.name and op.type == "AddN"]
    # Two batch-norm layers x (sum, sum of squares, count), each over 3 towers.
    assert len(sums) == 6
    assert all(len(op.inputs) == 3 for op in sums)
    assert {op.inputs[i].device.split("/")[-1] for op in sums for i in range(3)} == {
        "device:CPU:0", "device:CPU:1", "device:CPU:2"}
    # Every tower normalizes with those sums (their outputs reach all towers).
    for tower in range(3):
        consumers = {c.name.split("/")[0] for op in sums for out in op.outputs
                     for c in out.consumers()}
        assert f"tower_{tower}" in consumers


def test_header_names_the_synchronized_layers(three_tower_trainer):
    assert ("Batch norm", "synchronized over the global batch (2 layers)") in \
        three_tower_trainer.header_info()


def test_cli_resnet20_trains_with_synchronized_batch_norm():
    done = subprocess.run(
        [sys.executable, "-m", "towertrain", "--model=resnet20", "--device=cpu", "--num_gpus=2",
         "--variable_update=replicated", "--batch_size=2", "--num_batches=2",
         "--num_warmup_batches=1", "--display_every=1", "--sync_batch_norm"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert re.search(r"Batch norm:\s+synchronized over the global batch \(19 layers\)",
                     done.stdout), done.stdout
    assert re.search(r"^3\timages/sec", done.stdout, re.M), done.stdout


@pytest.mark.parametrize("overrides,message", [
    (dict(variable_update="independent"), r"--sync_batch_norm=True: needs one model"),
    (dict(xla_compile=True), r"--sync_batch_norm=True: conflicts with --xla_compile"),
])
def test_refused_combinations_name_the_flags(overrides, message):
    with pytest.raises(ParamsError, match=message):
        Params(model="trivial", device="cpu", num_gpus=2, sync_batch_norm=True, **overrides)


def test_a_model_without_batch_norm_is_refused():
    model = keras.Sequential([keras.Input(IMAGE_SHAPE), keras.layers.Flatten(),
                              keras.layers.Dense(NUM_CLASSES)], name="plain")
    images, labels = data(4)
    params = Params(device="cpu", num_gpus=2, sync_batch_norm=True)
    with pytest.raises(ParamsError, match=r"model 'plain' has no batch-norm layers"):
        Trainer(params, model=model, input_source=from_arrays(images, labels, 4))


def test_towers_with_different_layers_fail_instead_of_hanging():
    group = lockstep.Lockstep(2, "/cpu:0")

    @tf.function(autograph=False)
    def traced():
        def tower(points):
            def run():
                x = tf.constant(1.0)
                for _ in range(points):
                    x = lockstep.current().all_sum([x])[0]
                return x
            return run
        return group.run([tower(2), tower(1)])

    with pytest.raises(lockstep.TowerMismatchError, match="cross-tower point 2"):
        traced.get_concrete_function()


def test_gpu_graph_sums_on_gpu0_and_keeps_each_towers_backward_on_its_gpu():
    """Traced for 4 GPUs (no GPU needed): the statistics are summed once per
    layer on /gpu:0 from each GPU's local sums, and every tower's backward
    pass (the gradient ops tf.gradients builds) stays on that tower's GPU."""
    images, labels = data(8)
    params = Params(device="gpu", num_gpus=4, variable_update="replicated",
                    all_reduce_spec="psgpu", data_format="NHWC", sync_batch_norm=True)
    trainer = Trainer(params, model=bn_model(BATCH_NORMS["fused"]),
                      input_source=from_arrays(images, labels, 8), check_devices=False)
    graph = trainer.trace_step().graph

    def gpu(device):
        spec = tf.DeviceSpec.from_string(device)
        return spec.device_index if spec.device_type == "GPU" else None

    sums = [op for op in graph.get_operations()
            if "cross_tower_sum" in op.name and op.type == "AddN"]
    assert len(sums) == 6 and {gpu(op.device) for op in sums} == {0}
    for op in sums:
        assert [gpu(t.op.device) for t in op.inputs] == [0, 1, 2, 3]
    filter_grads = [op for op in graph.get_operations() if op.type == "Conv2DBackpropFilter"]
    assert sorted(gpu(op.device) for op in filter_grads) == [0, 1, 2, 3]


def test_an_error_in_one_tower_is_raised_and_no_tower_hangs():
    group = lockstep.Lockstep(3, "/cpu:0")

    def tower(fail):
        def run():
            x = lockstep.current().all_sum([tf.constant(1.0)])[0]
            if fail:
                raise ValueError("tower 1 cannot build its layer")
            return lockstep.current().all_sum([x])[0]
        return run

    @tf.function(autograph=False)
    def traced():
        return group.run([tower(False), tower(True), tower(False)])

    with pytest.raises(ValueError, match="tower 1 cannot build its layer"):
        traced.get_concrete_function()
