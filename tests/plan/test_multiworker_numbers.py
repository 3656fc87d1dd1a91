"""Every number the plan works out from the topology, for a plan of 2 workers
x 2 devices, against values computed here from W, D and the batch: the
header lines the plan decides (the whole set: a new line without its
expected value here fails), the intra-op pool a worker takes, the learning
rate's linear scaling, the epoch's updates, and the refusal of a global batch
larger than an epoch with its advice, and the out-of-memory message. One worker cannot tell `towers` from
`towers x workers`; two workers x two devices tell every product apart."""
import math
import types

import pytest

from towertrain import Params, ParamsError, plan
from towertrain.config.cluster_spec import Cluster
from towertrain.config.machine import Machine

W, D, B, K = 2, 2, 3, 2  # workers, devices per worker, per device, accumulation
CORES = 8
GLOBAL = B * D * W  # what the workers' input says (each worker's B x D, times W)
CLUSTER = Cluster(workers=("127.0.0.1:1111", "127.0.0.1:2222"), task_index=0)


def _plan(examples, steps_per_epoch, devices=D, **kw):
    params = Params(model="trivial", device="cpu", num_gpus=devices, batch_size=B,
                    variable_update="collective_all_reduce", **kw)
    layout = plan.lay_out(params, machine=Machine(gpus=0, cores=CORES), cluster=CLUSTER)
    return plan.build(params, layout, plan.InputFacts(steps_per_epoch=steps_per_epoch,
                                                      global_batch=B * devices * W,
                                                      num_examples=examples))


def test_the_header_threads_and_learning_rate_of_two_workers_of_two_devices():
    examples, epochs, base = 60, 2, 4
    run = _plan(examples, math.ceil(examples / GLOBAL), gradient_accumulation_steps=K,
                num_epochs=epochs, num_warmup_batches=1, init_learning_rate=0.1,
                scale_learning_rate="linear", base_batch_size=base)
    batches = math.ceil(examples / GLOBAL)
    updates = epochs * math.ceil(batches / K)
    assert run.describe() == {
        "Batch size": [f"{GLOBAL} global", f"{B} per device"],
        "Num batches": [f"{updates - 1} timed", f"of {updates} steps ({epochs} epochs; the "
                                                "first is warmup, untimed)"],
        "Devices": str([f"/cpu:{i}" for i in range(D)]),
        "Data format": "NHWC",
        "Variables": "collective_all_reduce",
        "Epoch": f"{examples} examples, {batches} batches of {GLOBAL} (the input)",
        "Cluster": f"{W} workers x {D} devices",
        "Accumulation": f"{K} batches per update ({GLOBAL * K} examples; the last update of "
                        "an epoch takes the batches left)",
        "AllReduce": "pscpu/xring",
        "Collectives": "ring (TensorFlow's ring over gRPC; the step's scalars ride the "
                       "last pack)",
    }
    assert (run.batches.per_process, run.batches.global_batch) == (B * D, GLOBAL)
    # Both workers share this host's cores with both their towers.
    assert run.runtime.num_intra_threads == CORES // (W * D)
    assert run.runtime.intra_threads_why == (f"{CORES} cores / ({W} workers x {D} towers) on "
                                             "this host; --num_intra_threads sets it")
    rate = run.recipe.learning_rate
    assert (rate.global_batch, rate.scale, rate.steps_per_epoch) == (
        GLOBAL * K, GLOBAL * K / base, math.ceil(batches / K))


@pytest.mark.parametrize("examples,fix", [
    (10, f"use a smaller --batch_size (at most {10 // (W * D)} per device) or fewer devices"),
    (3, "use at most 3 devices"),
])
def test_a_global_batch_of_two_workers_larger_than_the_epoch_is_refused(
        tmp_path, examples, fix):
    with pytest.raises(ParamsError) as refused:
        _plan(examples, 1, num_epochs=1, data_dir=str(tmp_path))
    assert str(refused.value) == (
        f"--batch_size={B}: the global batch of {GLOBAL} ({B} per device x {D} devices x {W} "
        f"workers) is larger than the {examples} examples of an epoch (the files in "
        f"--data_dir), so no step would train on a full batch; {fix}")


def test_the_out_of_memory_message_of_two_workers_adds_up_to_the_global_batch():
    from towertrain.trainer import Trainer
    run = _plan(None, None)
    worker = types.SimpleNamespace(plan=run, devices=[f"/cpu:{i}" for i in range(D)])
    error = Trainer._out_of_memory(worker, "in step 1", "lower --batch_size")
    assert str(error) == (f"out of memory in step 1: --batch_size={B} per device on cpu "
                          f"({D} devices x {W} workers, global batch {GLOBAL}); lower "
                          "--batch_size")


@pytest.mark.parametrize("devices,line", [(1, f"{W} workers x 1 device"),
                                          (D, f"{W} workers x {D} devices")])
def test_the_cluster_line_names_each_workers_devices(devices, line):
    run = _plan(None, None, devices=devices)
    assert (run.describe()["Cluster"], run.describe()["Batch size"]) == (
        line, [f"{B * devices * W} global", f"{B} per device"])


@pytest.mark.parametrize("spec", ["nccl/xring", "scatter/xring", "collective"])
def test_gpu_workers_collectives_line_names_nccl_alone(spec):
    """On GPUs with NCCL every gradient pack crosses from a GPU: no spec the
    plan accepts adds the /cpu:0 crossing (pscpu/xring with NCCL is refused)."""
    params = Params(model="trivial", device="gpu", num_gpus=D, batch_size=B,
                    variable_update="collective_all_reduce", all_reduce_spec=spec,
                    collective_implementation="nccl")
    layout = plan.lay_out(params, machine=Machine(gpus=D, cores=CORES), cluster=CLUSTER)
    run = plan.build(params, layout, plan.InputFacts(global_batch=GLOBAL))
    assert run.describe()["Collectives"] == (
        "nccl (NCCL between the workers' GPUs; the step's scalars ride the last pack)")


@pytest.mark.parametrize("devices,examples,where,fix", [
    # As many examples as devices: one per device still fits.
    (D, W * D, f"{B} per device x {D} devices x {W} workers", "use a smaller --batch_size (at "
     "most 1 per device) or fewer devices"),
    (1, 4, f"{B} per device x 1 device x {W} workers", "use a smaller --batch_size (at most "
     f"{4 // W} per device) or fewer devices"),
])
def test_the_refusal_s_advice_at_one_example_per_device_and_one_device(
        tmp_path, devices, examples, where, fix):
    with pytest.raises(ParamsError) as refused:
        _plan(examples, 1, devices=devices, num_epochs=1, data_dir=str(tmp_path))
    assert str(refused.value) == (
        f"--batch_size={B}: the global batch of {B * devices * W} ({where}) is larger than the "
        f"{examples} examples of an epoch (the files in --data_dir), so no step would train on "
        f"a full batch; {fix}")


def test_an_epoch_run_warms_up_at_most_all_but_its_last_step():
    examples = 2 * GLOBAL  # 2 steps an epoch
    run = _plan(examples, 2, num_epochs=1, num_warmup_batches=5)
    assert (run.steps.warmup, run.steps.timed, run.steps.total) == (1, 1, 2)


@pytest.mark.parametrize("flags,dtype", [({}, "float16"),
                                         ({"compact_transfer_dtype": "bfloat16"}, "bfloat16")])
def test_the_header_says_the_gradients_cross_workers_in_half_precision(flags, dtype):
    run = _plan(None, None, compact_gradient_transfer=True, **flags)
    assert run.exchange.compact_transfer_dtype == dtype
    assert run.describe()["AllReduce"] == (f"pscpu/xring, gradients summed in {dtype} "
                                           "(--compact_gradient_transfer)")
