"""Each model's own learning-rate recipe, step by step, against tf_cnn_benchmarks.

tf_cnn_benchmarks' get_learning_rate overrides (scripts/tf_cnn_benchmarks/
models/: resnet_model.py's ResnetModel and ResnetCifar10Model,
densenet_model.py's DensenetCifar10Model, alexnet_model.py's
AlexnetCifar10Model) are written out below as plain Python from their
formulas, and every registered model mapped to one is compared with the
schedule its run plan builds (the object the optimizers call), on synthetic
data (the dataset's known size), at step 0, the warmup's end and the steps
either side of every boundary; global batches B (per device x devices, as
tf_cnn_benchmarks passes it) of 128, 256 and 1024 on 1 and 8 devices, in
replicated and parameter_server modes.

tf_cnn_benchmarks' replicated (and collective_all_reduce) mode sums the
devices' gradients where towertrain averages them, so its step there is N x
its rate x the mean gradient: towertrain's rate must be N x tf_cnn_benchmarks'.
"""
import pytest

from towertrain import plan
from towertrain.config.cluster_spec import SINGLE, Cluster
from towertrain.config.machine import Machine
from towertrain.config.params import Params
from towertrain.errors import ParamsError
from towertrain.models import catalog
from towertrain.recipe import lr_schedule

IMAGENET_EXAMPLES, CIFAR10_EXAMPLES = 1281167, 50000
MACHINE = Machine(gpus=0, cores=2)


def piecewise_constant(step, boundaries, values):
    """tf.train.piecewise_constant: values[i] while step <= boundaries[i]."""
    for boundary, value in zip(boundaries, values):
        if step <= boundary:
            return value
    return values[-1]


def resnet_imagenet(B, mode, num_gpus):
    """ResnetModel.get_learning_rate and get_scaled_base_learning_rate."""
    base_lr = 0.128
    if mode == "replicated":
        base_lr = 0.128 / num_gpus
    rescaled_lr = base_lr * (B / 256)
    num_batches_per_epoch = IMAGENET_EXAMPLES / B
    boundaries = [int(num_batches_per_epoch * x) for x in [30, 60, 80, 90]]
    values = [rescaled_lr * v for v in [1, 0.1, 0.01, 0.001, 0.0001]]
    warmup_steps = int(num_batches_per_epoch * 5)

    def rate(step):
        if step < warmup_steps:
            return rescaled_lr * step / warmup_steps
        return piecewise_constant(step, boundaries, values)
    return rate, [0, warmup_steps - 1, warmup_steps] + _around(boundaries)


def resnet_cifar(B, mode, num_gpus):
    """ResnetCifar10Model.get_learning_rate."""
    num_batches_per_epoch = int(50000 / B)
    boundaries = [num_batches_per_epoch * x for x in [82, 123, 300]]
    values = [0.1, 0.01, 0.001, 0.0002]
    return (lambda step: piecewise_constant(step, boundaries, values),
            [0] + _around(boundaries))


def densenet_cifar(B, mode, num_gpus):
    """DensenetCifar10Model.get_learning_rate."""
    num_batches_per_epoch = 50000 // B
    boundaries = [num_batches_per_epoch * x for x in [150, 225, 300]]
    values = [0.1, 0.01, 0.001, 0.0001]
    return (lambda step: piecewise_constant(step, boundaries, values),
            [0] + _around(boundaries))


def alexnet_cifar(B, mode, num_gpus):
    """AlexnetCifar10Model.get_learning_rate: exponential_decay, staircase."""
    decay_steps = 100 * 50000 // B
    return (lambda step: 0.1 * 0.1 ** (step // decay_steps),
            [0] + _around([decay_steps - 1, 2 * decay_steps - 1]))


def _around(boundaries):
    return [step for b in boundaries for step in (b, b + 1)]


# towertrain's registered models -> the tf_cnn_benchmarks formula of their counterpart.
TFCNN = {
    **{name: resnet_imagenet for name in ("resnet50", "resnet50_v1.5", "resnet101",
                                          "resnet152")},
    **{f"resnet{depth}{suffix}": resnet_cifar for depth in (20, 32, 44, 56, 110)
       for suffix in ("", "_v2")},
    "densenet40_k12": densenet_cifar,
    "alexnet_cifar": alexnet_cifar,
}


def schedule_of(cluster=SINGLE, global_batch=None, **flags):
    """The schedule a run on synthetic data trains with (global_batch: the
    cluster's, which a multi-worker input gives the plan)."""
    params = Params(device="cpu", **flags)
    layout = plan.lay_out(params, machine=MACHINE, cluster=cluster)
    run_plan = plan.build(params, layout, plan.InputFacts(global_batch=global_batch,
                                                          synthetic=True))
    return lr_schedule.build(run_plan.recipe.learning_rate)


def test_every_model_with_a_recipe_is_mapped_and_the_others_have_none():
    with_recipe = {name for name in catalog.registered_names()
                   if catalog.get_spec(name).learning_rate_recipe is not None}
    assert with_recipe == set(TFCNN)


@pytest.mark.parametrize("name", sorted(TFCNN))
def test_the_recipe_steps_as_tf_cnn_benchmarks(name):
    for mode in ("replicated", "parameter_server"):
        for num_gpus in (1, 8):
            for B in (128, 256, 1024):
                schedule = schedule_of(model=name, num_gpus=num_gpus, batch_size=B // num_gpus,
                                       variable_update=mode)
                tfcnn_rate, steps = TFCNN[name](B, mode, num_gpus)
                summed = num_gpus if mode == "replicated" else 1
                got = {step: schedule.value_at(step) for step in steps}
                want = {step: summed * tfcnn_rate(step) for step in steps}
                assert got == pytest.approx(want, rel=1e-6, abs=1e-12), (mode, num_gpus, B)


def test_collective_all_reduce_sums_every_worker_s_devices_as_there():
    # 2 workers x 4 devices x 32: B = 256 (tf_cnn_benchmarks passes batch x workers);
    # it sums all 8 devices' gradients and ResnetModel divides only in replicated.
    cluster = Cluster(("h:1", "h:2"), 0, source="flags")
    for name in ("resnet50", "resnet20"):
        schedule = schedule_of(cluster, 256, model=name, num_gpus=4, batch_size=32,
                               variable_update="collective_all_reduce",
                               worker_hosts="h:1,h:2")
        tfcnn_rate, steps = TFCNN[name](256, "collective_all_reduce", 4)
        assert ({s: schedule.value_at(s) for s in steps}
                == pytest.approx({s: 8 * tfcnn_rate(s) for s in steps}, rel=1e-6, abs=1e-12))


def test_an_update_s_examples_are_the_batch_in_accumulation_and_independent_modes():
    # --gradient_accumulation_steps=2: an update of 2 x 2 x 64 = 256 examples
    # steps as tf_cnn_benchmarks' batch of 256; independent towers as its 2 x 64
    # (its batch_size there too), each applying its own mean: nothing summed.
    for flags, B, mode in [(dict(gradient_accumulation_steps=2), 256, "replicated"),
                           (dict(), 128, "independent")]:
        for name in ("resnet50", "resnet20"):
            schedule = schedule_of(model=name, num_gpus=2, batch_size=64,
                                   variable_update=mode, **flags)
            tfcnn_rate, steps = TFCNN[name](B, mode, 2)
            summed = 2 if mode == "replicated" else 1
            assert ({s: schedule.value_at(s) for s in steps} == pytest.approx(
                {s: summed * tfcnn_rate(s) for s in steps}, rel=1e-6, abs=1e-12)), (name, mode)


def test_the_header_line_says_the_recipe_and_whose_it_is():
    schedule = schedule_of(model="resnet50", num_gpus=4, batch_size=64,
                           variable_update="replicated")
    assert schedule.describe() == (
        "0.128 / 4 devices (replicated) x 256/256 x 4 (tf_cnn_benchmarks' replicated sums "
        "the 4 devices' gradients; towertrain averages them) = 0.128, warmup from 0 over "
        "5 epochs (25022 steps), 0.128 until epoch 30 (step 150137), 0.0128 until epoch 60 "
        "(step 300274), 0.00128 until epoch 80 (step 400365), 0.000128 until epoch 90 "
        "(step 450411), then 1.28e-05; epoch = 1,281,167 examples / 256 (imagenet's known "
        "training size, as tf_cnn_benchmarks; the data is synthetic) (resnet50's recipe, "
        "as tf_cnn_benchmarks' ResnetModel)")


@pytest.mark.parametrize("flags", [
    dict(num_learning_rate_warmup_epochs=1),
    dict(num_epochs_per_decay=1, learning_rate_decay_factor=0.5),
    dict(scale_learning_rate="linear", base_batch_size=256)])
def test_a_flag_the_recipe_would_ignore_is_refused(flags):
    flag, value = next(iter(flags.items()))
    with pytest.raises(ParamsError, match=(
            f"^--{flag}={value}: only applies with --init_learning_rate or "
            "--piecewise_learning_rate_schedule; without them resnet20 trains with its own "
            "learning-rate recipe")):
        schedule_of(model="resnet20", **flags)
    # With --init_learning_rate the flags' schedule replaces the recipe.
    assert schedule_of(model="resnet20", init_learning_rate=0.05, **flags).source == "flags"


def test_a_user_model_may_give_a_recipe_and_defaults_to_a_constant(monkeypatch):
    from towertrain import models
    from towertrain.models import registry
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    recipe = models.LearningRateRecipe(values=(0.2, 0.02), boundary_epochs=(2,),
                                       warmup_epochs=1)
    models.register_model("recipe_net", lambda **_: None, 32, 10, default_learning_rate=0.3,
                          default_dataset="cifar10", learning_rate_recipe=recipe)
    models.register_model("plain_net", lambda **_: None, 32, 10, default_learning_rate=0.3,
                          default_dataset="cifar10")
    # 50,000 / 10 = 5000 steps an epoch: warmup to step 5000, 0.02 after step 10000.
    schedule = schedule_of(model="recipe_net")
    assert {s: schedule.value_at(s) for s in (0, 2500, 5000, 10000, 10001)} == pytest.approx(
        {0: 0.0, 2500: 0.1, 5000: 0.2, 10000: 0.2, 10001: 0.02})
    assert schedule.describe().endswith("(recipe_net's recipe)")
    plain = schedule_of(model="plain_net")
    assert (plain.kind, plain.initial_value, plain.describe()) == (
        "constant", pytest.approx(0.3), "0.3, constant (plain_net's rate)")
