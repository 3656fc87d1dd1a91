"""Multi-worker training (--variable_update=collective_all_reduce) with real
worker processes on 127.0.0.1, on free ports the test picks.

Every process a test starts is killed by the test when it fails, and every
wait has a hard timeout, so no test can hang. Run as a script, this file is
the worker of the tests that share one 2-worker launch (exchange_outputs).
"""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import helpers.cli
import helpers.tiny_models  # noqa: F401 - registers ckpt_tiny (conv + batch norm)
from helpers.checkpoint_files import committed_steps
from helpers.ports import free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/<wing>/this file
NUM_EXAMPLES, PER_DEVICE, IMAGE = 34, 4, (8, 8, 3)  # 34 = 16 + 16 + 2: an uneven last batch
GLOBAL_BATCH = PER_DEVICE * 4


def _data():
    rng = np.random.default_rng(7)
    images = rng.standard_normal((NUM_EXAMPLES,) + IMAGE).astype(np.float32)
    labels = rng.integers(0, 10, NUM_EXAMPLES).astype(np.int32)
    return images, labels


def _params(**changes):
    from towertrain.config.params import Params
    # A batch-norm model: its moving statistics must be the chief tower 0's.
    base = dict(model="ckpt_tiny", device="cpu", batch_size=PER_DEVICE, num_epochs=1,
                num_warmup_batches=0, optimizer="momentum", init_learning_rate=0.05,
                data_format="NHWC")
    base.update(changes)
    return Params(**base)




def _hosts(count=2):
    return ",".join(f"127.0.0.1:{port}" for port in free_ports(count))


# The step's tail, in the last pack on each device: the loss, the example
# count and the stop requests, and each of the 2 workers' time to reach the
# exchange and input wait (the straggler report's, on by default).
TAIL = 3 + 2 * 2


def _env():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    # tests/ too: the worker mode of this file imports helpers.
    env["PYTHONPATH"] = os.pathsep.join([REPO, os.path.join(REPO, "tests"), env.get("PYTHONPATH", "")])
    env.pop("TF_CONFIG", None)
    return env


def _kill_all(procs):
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def _wait_all(procs, timeout):
    deadline = time.monotonic() + timeout
    for proc in procs:
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))


def _gradient_collectives(trainer):
    """(group size, elements) of each cross-process collective of the gradient
    packs in the traced step (the exchange sits in its top-level graph)."""
    import tensorflow as tf
    return [(int(tf.get_static_value(op.inputs[1])), int(op.inputs[0].shape.num_elements()))
            for op in trainer.trace_step().graph.get_operations()
            if op.type == "CollectiveReduceV2" and "/pack" in op.name]


def _all_collectives(trainer):
    """How many collective ops the traced step holds, nested functions included."""
    from helpers.graph_walks import all_ops
    return sum(op.type.startswith("Collective")
               for op in all_ops(trainer.trace_step().graph))


def _write_files(directory):
    """CIFAR-10 binary files (34 training examples: batches of 16, 16, 2) and
    ImageNet TFRecord shards (20: 16, 4) in directory/cifar10, directory/imagenet."""
    import tensorflow as tf
    from helpers import cifar_files
    from helpers.data_files import example, solid
    cifar_files.write_dataset(os.path.join(directory, "cifar10"), NUM_EXAMPLES, 8)
    os.makedirs(os.path.join(directory, "imagenet"))
    for shard in range(2):
        path = os.path.join(directory, "imagenet", f"train-{shard:05d}-of-00002")
        with tf.io.TFRecordWriter(path) as writer:
            for i in range(10):
                writer.write(example(solid((20 * i, 90 + shard, 200)), 1 + (i + shard) % 4,
                                     (0.1, 0.2, 0.9, 0.8) if i % 2 else None))


def _recording_decodes(positions):
    """Wraps the readers' per-example preprocessing so each call appends its
    example's seed pair (epoch key, position in the epoch) to `positions`:
    what this worker decoded, whatever it read ahead."""
    import tensorflow as tf
    from towertrain.input_pipeline import preprocessing

    def record(seed):
        positions.append(tuple(int(v) for v in seed))
        return np.int32(0)

    def recorded(real, seed_at):
        def wrapper(*args):
            tick = tf.numpy_function(record, [args[seed_at]], tf.int32)
            with tf.control_dependencies([tick]):
                return tf.identity(real(*args))
        return wrapper
    preprocessing.cifar_train = recorded(preprocessing.cifar_train, 1)
    preprocessing.imagenet_train = recorded(preprocessing.imagenet_train, 3)


def _flags(text):
    """'weight_decay=0.01,use_fp16=true' -> the Params overrides it names."""
    import json
    return {name: json.loads(value) for name, value in
            (item.split("=") for item in text.split(",") if item)}


def _infinite_where_marked(labels, logits):
    """Cross-entropy, plus an infinity that has no gradient for an example
    labelled -1 (scored as label 0): a non-finite loss with finite gradients."""
    import keras
    import tensorflow as tf
    loss = keras.losses.sparse_categorical_crossentropy(tf.maximum(labels, 0), logits,
                                                        from_logits=True)
    return loss + tf.stop_gradient(tf.where(labels < 0, np.inf, 0.0))


def _run_worker(hosts, task, out_path, specs, packs, accumulations, epochs_list, models,
                flags_list):
    """Worker process: joins the cluster (2 logical CPUs), then for each
    config (the `+`-joined --all_reduce_spec values `specs`, with the
    `+`-joined --gradient_repacking `packs` (or --gradient_pack_mb, as "<MB>mb"),
    --gradient_accumulation_steps `accumulations`, epoch counts `epochs_list`,
    --model `models` and more flags `flags_list`, _flags's form) trains a fresh Trainer
    that many epochs of the arrays (3 batches each, the last uneven), and
    saves every copy of its weights and the gradient collectives of its step
    in out_path's `.<index>.npz`. One process per worker for several configs:
    its start costs far more than their steps."""
    from towertrain import trainer as trainer_lib
    from towertrain.input_pipeline import from_arrays
    images, labels = _data()
    positions = []
    _recording_decodes(positions)
    configs = zip(specs.split("+"), packs.split("+"), accumulations.split("+"),
                  epochs_list.split("+"), models.split("+"), flags_list.split("+"))
    for index, (spec, pack, accumulation, epochs, model, flags) in enumerate(configs):
        accumulation, epochs = int(accumulation), int(epochs)
        model, _, files = model.partition(":")  # trivial:cifar10 trains on those files
        # ckpt_tiny:nan: a NaN image in worker 1's share only; ckpt_tiny:infloss:
        # an example there whose loss is infinite but its gradient finite;
        # tiny_dense:huge: an image there of 1e8s (finite in float32, its
        # gradient beyond float16's range).
        poisoned = files in ("nan", "infloss", "huge")
        loss_fn = _infinite_where_marked if files == "infloss" else None
        poison, files = (files, "") if poisoned else ("", files)
        data = dict(data_name=files, distortions=True, data_dir=os.path.join(
            os.path.dirname(out_path), files)) if files else {}
        pack_mb = float(pack[:-2]) if pack.endswith("mb") else None  # "0.0002mb": sized
        overrides = _flags(flags)
        # stop_request_at=N: worker 1 asks to stop before step N (as its
        # SIGTERM handler would); each step's stop_requests is recorded.
        stop_request_at = overrides.pop("stop_request_at", None)
        params = _params(**{**dict(
            model=model, num_gpus=2, variable_update="collective_all_reduce",
            worker_hosts=hosts, task_index=task, collective_timeout_secs=60,
            all_reduce_spec=spec, gradient_repacking=0 if pack_mb else int(pack),
            gradient_pack_mb=pack_mb, num_epochs=epochs,
            gradient_accumulation_steps=accumulation, **data), **overrides})
        if index == 0:
            trainer_lib.join_cluster(params)
        del positions[:]
        arrays, marked = images, labels
        if poisoned:  # global rows 8..15 are towers 2 and 3: worker 1's
            arrays, marked = images.copy(), labels.copy()
            if poison == "huge":
                arrays[12] = 1e8
            elif loss_fn is None:
                arrays[12] = np.nan
                # from_arrays refuses NaN up front; this is the engine's test
                # of a NaN that reaches a step (as from_dataset's data can).
                from towertrain.input_pipeline import array_checks
                array_checks.check_finite = lambda images, labels: None
            else:
                marked[12] = -1
        trainer = trainer_lib.Trainer(params, input_source=None if files else from_arrays(
            arrays, marked, GLOBAL_BATCH, num_epochs=epochs), loss_fn=loss_fn)
        assert trainer.global_batch_size == GLOBAL_BATCH, trainer.global_batch_size
        results = []
        for step in range(1, 2 if poisoned else trainer.total_steps + 1):
            if task == 1 and step == stop_request_at:
                trainer.stop_request.assign(1)
            results.append(trainer.step())
        losses = [float(r) for r in results]
        copies = [[v.numpy() for v in copy] + [v.numpy() for v in stats] for copy, stats in
                  zip(trainer.variables.trainable_copies(),
                      trainer.variables.non_trainable_copies())]
        import tensorflow as tf
        np.savez(f"{out_path}.{index}.npz", losses=np.array(losses),
                 steps=trainer.global_step(),
                 intra_op_threads=tf.config.threading.get_intra_op_parallelism_threads(),
                 collectives=np.array(_gradient_collectives(trainer)),
                 all_collectives=_all_collectives(trainer),
                 decoded=np.array(positions, np.int64).reshape(-1, 2),
                 applied=np.array([bool(r.finite) for r in results]),
                 stop_requests=np.array([float(r.extras.get("stop_requests", -1))
                                         for r in results]),
                 examples=np.array([r.examples for r in results]),
                 **{f"copy{c}_{i}": value for c, copy in enumerate(copies)
                    for i, value in enumerate(copy)})
    sys.stdout.flush()
    os._exit(0)  # TensorFlow's gRPC teardown is not needed


def run_two_workers_each(tmp_path, configs):
    """Runs this file as two worker processes on a fresh 2-worker cluster,
    each training every (spec, packs, accumulation, epochs, model, flags) of `configs` in
    turn (_run_worker); returns the .npz outputs of both workers per config
    once both succeeded."""
    hosts = _hosts(2)
    prefixes = [str(tmp_path / f"worker{k}") for k in range(2)]
    joined = ["+".join(str(c[n]) for c in configs) for n in range(6)]
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "worker", hosts,
                               str(k), prefixes[k], *joined], cwd=REPO, env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for k in range(2)]
    try:
        _wait_all(procs, timeout=540)  # 2 cores shared with other work: slow starts
        logs = [proc.stdout.read() for proc in procs]
        for proc, log in zip(procs, logs):
            assert proc.returncode == 0, log[-3000:]
    finally:
        _kill_all(procs)
    return {config: [f"{prefix}.{index}.npz" for prefix in prefixes]
            for index, config in enumerate(configs)}


def assert_workers_equal(outs, steps, ref_losses, expected, copies=2):
    """Each worker's saved run (run_two_workers' outputs) took `steps` steps with
    the reference's losses, and each of its `copies` local copies holds `expected`."""
    for k, out in enumerate(outs):
        saved = np.load(out)
        assert int(saved["steps"]) == steps
        np.testing.assert_allclose(saved["losses"], ref_losses, rtol=1e-5, atol=1e-6)
        for c in range(copies):
            for i, value in enumerate(expected):
                np.testing.assert_allclose(saved[f"copy{c}_{i}"], value, rtol=1e-5,
                                           atol=1e-5, err_msg=f"worker {k} copy {c} var {i}")


# The flat exchange with one pack per dtype, the hierarchical one
# (--all_reduce_spec=pscpu/xring: summed on each worker, then one collective
# per pack between the workers) with 3 packs, and Horovod's shape
# (scatter/xring: each local device's shard of each pack across the workers)
# with 3 packs (65, 57, 56 values: pack 0 carries the 8 batch-norm
# statistics, so its shards are 33 and 32) and with packs of at most 200 B.
BYTE_PACKS = "0.0002mb"
EXCHANGES = [("collective", 0), ("pscpu/xring", 3), ("scatter/xring", 3),
             ("scatter/xring", BYTE_PACKS)]


def _pack_count(packs, num_values):
    """The packs of a float32 gradient of num_values: counted, or the fewest
    of at most BYTE_PACKS' bytes."""
    if isinstance(packs, int):
        return packs
    pack_bytes = round(float(packs[:-2]) * 10**6)
    return -(-num_values * 4 // pack_bytes)
# --gradient_accumulation_steps=2 over two epochs (flat exchange), trained in
# the same launch.
ACCUMULATING = ("collective", 0, 2, 2, "ckpt_tiny", "")
# And with dropout: a micro-batch's masks are drawn by its slot among the
# whole cluster's towers, so worker 0's second micro-batch draws none of
# worker 1's first.
ACCUMULATING_DROPOUT = ("collective", 0, 2, 1, "tiny_dropout", "")
# And dropout with batch norm (flat exchange): the statistics ride pack 0, the
# int64 seed states stay on their worker.
DROPOUT_BN = ("collective", 0, 1, 1, "tiny_dropout_bn", "")
# Then a Trainer of another model (other variable shapes) in the same
# processes: its collectives must not meet the first model's instance keys.
SECOND_MODEL = ("pscpu/xring", 2, 1, 1, "tiny_dense", "")
# Then the file readers, --distortions on: each worker decodes its share only.
FILES = [("pscpu/xring", 0, 1, 1, "trivial:cifar10", ""),
         ("pscpu/xring", 0, 1, 1, "trivial:imagenet", "")]
# Last, one step with a NaN image in worker 1's share only.
POISONED = ("pscpu/xring", 2, 1, 1, "ckpt_tiny:nan", "")
# And one with an infinite loss but finite gradients in worker 1's share: the
# exchanged gradient sum is finite everywhere, so only the loss riding the
# last pack keeps worker 0 from applying.
INFINITE_LOSS = ("pscpu/xring", 2, 1, 1, "ckpt_tiny:infloss", "")
# The step's count travels in its tail and the update divides by count /
# nominal (engine/step/train_step.py): with weight decay (its term inside the
# towers' loss) and accumulating, and in float16 (the count ahead of the
# towers there), each equals one process with 4 devices.
DECAYED = [("pscpu/xring", 2, 1, 1, "ckpt_tiny", "weight_decay=0.01"),
           ("collective", 0, 2, 2, "ckpt_tiny", "weight_decay=0.01")]
HALF = ("pscpu/xring", 2, 1, 1, "ckpt_tiny",
        "use_fp16=true,fp16_loss_scale=128,allow_emulated_precision=true")
# Worker 1 asks to stop before step 2 (its SIGTERM): in every precision, on a
# model with batch norm and one without, and with float16 variables (no
# float32 pack at all), both workers' step 2 decides on that request. In
# half precision it travels with the count before the towers, in float32 in
# the last pack.
STOP_REQUESTED = [
    ("collective", 0, 1, 1, "tiny_dense", "stop_request_at=2"),
    ("collective", 0, 1, 1, "ckpt_tiny",
     "use_fp16=true,allow_emulated_precision=true,stop_request_at=2"),
    ("pscpu/xring", 0, 1, 1, "tiny_dense", "use_bf16=true,stop_request_at=2"),
    ("collective", 0, 1, 1, "tiny_dense",
     "use_fp16=true,fp16_vars=true,allow_emulated_precision=true,stop_request_at=2")]
# Gradients summed in half precision (--compact_gradient_transfer), 2 workers x
# 1 device, 7 epochs (21 steps, each third one of 2 examples: worker 1's
# tower empty), dropout and batch norm, in float16 and bfloat16; the other
# cross-worker specs over one epoch; and one step whose float16 sum
# overflows in worker 1's share.
WIRE = "num_gpus=1,batch_size=8,compact_gradient_transfer=true"
HALF_WIRE = [("pscpu/xring", 0, 1, 7, "tiny_dropout_bn", WIRE)] + [
    (spec, 0, 1, 1, "tiny_dropout_bn", WIRE) for spec in ("collective", "scatter/xring")]
HALF_WIRE_BF16 = ("pscpu/xring", 0, 1, 7, "tiny_dropout_bn",
                  WIRE + ',compact_transfer_dtype="bfloat16"')
OVERFLOW = ("pscpu/xring", 2, 1, 1, "tiny_dense:huge", "compact_gradient_transfer=true")
# --sync_batch_norm, 2 workers x 1 device over 7 epochs, and 2 x 2 over one
# epoch: its third batch, of 2 examples, leaves both of worker 1's towers
# empty at run time (slices 1, 1, 0, 0), and they still send the moments.
SYNC_BN = [("pscpu/xring", 0, 1, 7, "ckpt_tiny", "num_gpus=1,batch_size=8,sync_batch_norm=true"),
           ("pscpu/xring", 0, 1, 1, "ckpt_tiny", "sync_batch_norm=true")]


@pytest.fixture(scope="module")
def exchange_outputs(tmp_path_factory):
    """Both exchanges' runs, the accumulating run and the second model's from
    one 2-worker launch (a Trainer each): {(spec, packs), ACCUMULATING or
    SECOND_MODEL: the two .npz outputs}."""
    configs = ([(spec, packs, 1, 1, "ckpt_tiny", "") for spec, packs in EXCHANGES]
               + [ACCUMULATING, ACCUMULATING_DROPOUT, SECOND_MODEL] + FILES + [POISONED, INFINITE_LOSS] + DECAYED
               + [HALF])
    directory = tmp_path_factory.mktemp("exchanges")
    _write_files(str(directory))
    outputs = run_two_workers_each(directory, configs)
    kept_whole = ([ACCUMULATING, ACCUMULATING_DROPOUT, SECOND_MODEL, POISONED, INFINITE_LOSS,
                   HALF] + FILES + DECAYED)
    result = {(config if config in kept_whole else config[:2]): outs
              for config, outs in outputs.items()}
    result["data"] = str(directory)
    return result


@pytest.fixture(scope="module")
def stop_outputs(tmp_path_factory):
    """STOP_REQUESTED's runs, in a 2-worker launch of their own (the shared
    one is near its time limit on 2 busy cores): {config: the two outputs}."""
    return run_two_workers_each(tmp_path_factory.mktemp("stops"), STOP_REQUESTED)


@pytest.fixture(scope="module")
def wire_outputs(tmp_path_factory):
    """A second 2-worker launch (its own time budget): dropout with batch
    norm, half precision on the wire and --sync_batch_norm, {config: the two .npz outputs}. The first
    config has 2 devices per worker (the process's logical CPUs are set
    when it joins)."""
    configs = [OVERFLOW, DROPOUT_BN, SYNC_BN[1]] + HALF_WIRE + [HALF_WIRE_BF16, SYNC_BN[0]]
    return run_two_workers_each(tmp_path_factory.mktemp("wire"), configs)


@pytest.fixture(scope="module")
def four_device_reference():
    """One process holding all four devices, same global batch: the run both
    exchanges below must equal (trained once for both)."""
    from towertrain import trainer as trainer_lib
    from towertrain.input_pipeline import from_arrays
    images, labels = _data()
    reference = trainer_lib.Trainer(_params(num_gpus=4, variable_update="replicated"),
                                    input_source=from_arrays(images, labels, GLOBAL_BATCH,
                                                             num_epochs=1))
    ref_losses = [float(reference.step()) for _ in range(reference.total_steps)]
    trainable, stats = reference.variables.primary_variables()
    expected = [v.numpy() for v in trainable] + [v.numpy() for v in stats]
    assert reference.total_steps == 3
    assert len(stats) == 2  # the batch norm's moving mean and variance: global tower 0's
    initial = [v.numpy() for v in reference.model.trainable_variables]
    assert any(not np.allclose(a, b) for a, b in zip(initial, expected)), "nothing trained"
    return ref_losses, expected, len(trainable)


@pytest.mark.slow  # two worker processes (shared by both cases, as is the reference)
@pytest.mark.parametrize("spec,packs", EXCHANGES)
def test_two_workers_equal_one_process_with_four_devices(spec, packs, exchange_outputs,
                                                         four_device_reference):
    ref_losses, expected, num_trainable = four_device_reference
    outs = exchange_outputs[(spec, packs)]

    assert_workers_equal(outs, 3, ref_losses, expected)
    # Each worker's gradient collectives: flat, one per pack per local device
    # over all 4 devices; hierarchical, one per pack over the 2 workers, so
    # half the elements cross the network.
    num_values = sum(v.size for v in expected[:num_trainable])  # gradients
    # The batch norm's moving statistics ride in the first pack, the step's
    # tail in the last (no collective of their own).
    num_stats = sum(v.size for v in expected[num_trainable:])
    num_tail = TAIL
    num_packs = _pack_count(packs, num_values)
    for out in outs:
        collectives = np.load(out)["collectives"]
        if spec == "collective":
            assert collectives.shape == (2, 2) and set(collectives[:, 0]) == {4}
            assert collectives[:, 1].sum() == 2 * (num_values + num_stats + num_tail)
        elif spec == "scatter/xring":
            # Per pack one collective per local device (its shard, about half
            # the pack) over the 2 workers: the pack's elements cross once,
            # split between both devices' links.
            assert num_packs > 1
            assert collectives.shape == (2 * num_packs, 2) and set(collectives[:, 0]) == {2}
            assert collectives[:, 1].sum() == num_values + num_stats + num_tail
            shards = collectives[:, 1].reshape(num_packs, 2)
            assert (np.abs(shards[:, 0] - shards[:, 1]) <= 1).all(), shards
            assert (shards[:, 0] >= shards[:, 1]).all(), shards  # the first one longer
        else:
            assert collectives.shape == (packs, 2) and set(collectives[:, 0]) == {2}
            assert collectives[:, 1].sum() == num_values + num_stats + num_tail
            gradients = collectives[:, 1] - np.array([num_stats] + [0] * (packs - 2)
                                                     + [num_tail])
            assert gradients.max() - gradients.min() <= 1
    # Both workers on this host: cluster.setup gave each its share of the
    # cores for TensorFlow's intra-op pool before the runtime started.
    from towertrain.config import machine
    share = max(1, machine.available_cores() // 2)
    assert [int(np.load(out)["intra_op_threads"]) for out in outs] == [share, share]
    first, second = np.load(outs[0]), np.load(outs[1])
    for name in first.files:  # both workers' copies identical
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)


@pytest.mark.slow  # the shared 2-worker launch's third run; a 4-device reference
def test_two_workers_accumulating_equal_one_process_with_four_devices(exchange_outputs):
    """collective_all_reduce, 2 worker processes x 2 logical CPUs, K=2 over two
    epochs of 16 + 16 + 2 examples (updates of 32, 2, 32, 2: the short one
    leaves worker 1's towers empty) == one process with 4 devices, K=2:
    losses, weights and batch-norm statistics of every local copy."""
    from towertrain import trainer as trainer_lib
    from towertrain.input_pipeline import from_arrays
    images, labels = _data()
    reference = trainer_lib.Trainer(
        _params(num_gpus=4, variable_update="replicated", num_epochs=2,
                gradient_accumulation_steps=2),
        input_source=from_arrays(images, labels, GLOBAL_BATCH, num_epochs=2))
    assert reference.total_steps == 4
    ref_losses = [float(reference.step()) for _ in range(reference.total_steps)]
    trainable, stats = reference.variables.primary_variables()
    expected = [v.numpy() for v in trainable] + [v.numpy() for v in stats]
    assert_workers_equal(exchange_outputs[ACCUMULATING], 4, ref_losses, expected)


@pytest.mark.slow  # the shared 2-worker launch; a 4-device reference
def test_two_workers_accumulating_with_dropout_equal_one_process_with_four_devices(
        exchange_outputs):
    """2 workers x 2 devices, K=2, a dropout layer == one process with 4
    devices, K=2: every micro-batch of every tower of the cluster draws its
    own masks, as the one process's do."""
    from towertrain import trainer as trainer_lib
    from towertrain.input_pipeline import from_arrays
    images, labels = _data()
    reference = trainer_lib.Trainer(
        _params(model="tiny_dropout", num_gpus=4, variable_update="replicated",
                gradient_accumulation_steps=2),
        input_source=from_arrays(images, labels, GLOBAL_BATCH, num_epochs=1))
    assert reference.total_steps == 2
    ref_losses = [float(reference.step()) for _ in range(reference.total_steps)]
    # The weights (the dropout's seed state, a non-trainable variable, is
    # not a draw: the step sets each draw from (seed, step, slot)).
    trainable, _ = reference.variables.primary_variables()
    assert_workers_equal(exchange_outputs[ACCUMULATING_DROPOUT], 2, ref_losses,
                         [v.numpy() for v in trainable])


@pytest.mark.slow  # the shared 2-worker launch; a 4-device reference
def test_dropout_with_batch_norm_runs_no_collective_but_the_packs(wire_outputs):
    """A dropout + batch-norm model, 2 workers x 2 devices == one process with
    4 devices (losses, weights, batch-norm statistics), and the step's only
    collectives are its one gradient pack per device, which carries the
    statistics and the tail: the dropout's int64 seed state is no statistic
    to synchronize (the step sets it before each use)."""
    from towertrain import trainer as trainer_lib
    from towertrain.input_pipeline import from_arrays
    images, labels = _data()
    reference = trainer_lib.Trainer(
        _params(model="tiny_dropout_bn", num_gpus=4, variable_update="replicated"),
        input_source=from_arrays(images, labels, GLOBAL_BATCH, num_epochs=1))
    ref_losses = [float(reference.step()) for _ in range(reference.total_steps)]
    trainable, non_trainable = reference.variables.primary_variables()
    stats = [v for v in non_trainable if v.dtype == "float32"]
    assert len(stats) == 2 and len(non_trainable) == 3  # and the seed state, last
    expected = [v.numpy() for v in trainable] + [v.numpy() for v in stats]
    outs = wire_outputs[DROPOUT_BN]
    assert_workers_equal(outs, reference.total_steps, ref_losses, expected)
    num_values = sum(v.size for v in expected)
    for out in outs:
        saved = np.load(out)
        assert saved["collectives"].shape == (2, 2)  # one pack, on each local device
        # Each carries the gradients, the statistics and the step's tail.
        assert saved["collectives"][:, 1].tolist() == [num_values + TAIL] * 2
        assert int(saved["all_collectives"]) == 2


@pytest.mark.slow  # the shared 2-worker launch's last run; a 4-device reference
def test_a_second_model_in_the_same_worker_processes_trains_like_one_process(
        exchange_outputs):
    """A library user's next Trainer, of another model, in the processes that
    already ran ckpt_tiny's collectives: it trains (TensorFlow fixed the
    shapes of the first model's instance keys for the life of the process;
    this model's keys lie in its own key space) and equals one process with
    4 devices."""
    from towertrain import trainer as trainer_lib
    from towertrain.input_pipeline import from_arrays
    images, labels = _data()
    reference = trainer_lib.Trainer(_params(model="tiny_dense", num_gpus=4,
                                            variable_update="replicated"),
                                    input_source=from_arrays(images, labels, GLOBAL_BATCH,
                                                             num_epochs=1))
    ref_losses = [float(reference.step()) for _ in range(reference.total_steps)]
    trainable, stats = reference.variables.primary_variables()
    assert not stats
    assert_workers_equal(exchange_outputs[SECOND_MODEL], 3, ref_losses,
                         [v.numpy() for v in trainable])


@pytest.mark.slow  # the shared 2-worker launch's file runs; a 4-device reference each
@pytest.mark.parametrize("files", [config[4].split(":")[1] for config in FILES])
def test_two_workers_on_files_decode_only_their_share_and_equal_one_process(
        files, exchange_outputs):
    """2 workers x 2 devices reading the files with --distortions == 1 process
    with 4 devices (losses, weights), while each worker decoded only its
    towers' rows of every global batch: each decode call is recorded with its
    example's position, and in the first epoch the workers' positions are
    disjoint, each inside its share, and together every example once."""
    from towertrain import trainer as trainer_lib
    from towertrain.input_pipeline.arrays import AUGMENT, epoch_seed
    from towertrain.input_pipeline.slicing import WorkerShare, split_sizes
    config = next(c for c in FILES if c[4].endswith(files))
    data_dir = os.path.join(exchange_outputs["data"], files)
    reference = trainer_lib.Trainer(_params(
        model="trivial", num_gpus=4, variable_update="replicated", data_name=files,
        data_dir=data_dir, distortions=True))
    ref_losses = [float(reference.step()) for _ in range(reference.total_steps)]
    expected = [v.numpy() for v in reference.variables.primary_variables()[0]]
    examples = reference.input.num_examples
    assert_workers_equal(exchange_outputs[config], reference.total_steps, ref_losses, expected)
    first_epoch = int(epoch_seed(reference.plan.input.seed, 0, AUGMENT))
    seen = []
    for task, out in enumerate(exchange_outputs[config]):
        share = WorkerShare(2, task, 2)
        decoded = [int(p) for key, p in np.load(out)["decoded"] if key == first_epoch]
        assert len(decoded) == len(set(decoded))
        for position in decoded:
            batch_start = position - position % GLOBAL_BATCH
            sizes = split_sizes(min(GLOBAL_BATCH, examples - batch_start), 4)
            start = sum(sizes[:share.first_tower])
            assert start <= position - batch_start < start + sizes[2 * task] + sizes[2 * task + 1]
        seen += decoded
    assert sorted(seen) == list(range(examples))


@pytest.mark.slow  # the shared 2-worker launch's last run
@pytest.mark.parametrize("config", [POISONED, INFINITE_LOSS], ids=["nan-image", "inf-loss"])
def test_a_non_finite_step_on_one_worker_applies_nothing_on_any(config, exchange_outputs):
    """Worker 1's towers see a NaN image (or an infinite loss with finite
    gradients), worker 0's do not: the losses ride the last
    pack, so every device of both workers finds the summed pack non-finite
    and skips the update (worker 0 alone would apply it and the copies would
    part)."""
    first, second = (np.load(out) for out in exchange_outputs[config])
    assert list(first["applied"]) == [False] and list(second["applied"]) == [False]
    assert not np.isfinite(first["losses"][0]) and not np.isfinite(second["losses"][0])
    for name in first.files:
        if name.startswith("copy"):
            np.testing.assert_array_equal(first[name], second[name], err_msg=name)


@pytest.mark.slow  # the shared 2-worker launch's last runs; a 4-device reference each
@pytest.mark.parametrize("config", DECAYED + [HALF], ids=["decay", "decay-accumulating", "fp16"])
def test_the_count_in_the_tail_gives_one_process_s_update(config, exchange_outputs):
    """2 workers x 2 logical CPUs == 1 process with 4 devices over epochs of
    16 + 16 + 2 examples (the last step: count 2, nominal 16, worker 1's
    towers empty), with weight decay (its term is in the towers' loss, so
    the rescale by nominal / count must leave it counted once), accumulating,
    and in float16 with a loss scale."""
    from towertrain import trainer as trainer_lib
    from towertrain.input_pipeline import from_arrays
    _, _, accumulation, epochs, _, flags = config
    images, labels = _data()
    reference = trainer_lib.Trainer(
        _params(num_gpus=4, variable_update="replicated", num_epochs=epochs,
                gradient_accumulation_steps=accumulation, **_flags(flags)),
        input_source=from_arrays(images, labels, GLOBAL_BATCH, num_epochs=epochs))
    ref_losses = [float(reference.step()) for _ in range(reference.total_steps)]
    trainable, stats = reference.variables.primary_variables()
    expected = [v.numpy() for v in trainable] + [v.numpy() for v in stats]
    assert_workers_equal(exchange_outputs[config], reference.total_steps, ref_losses, expected)


@pytest.mark.slow  # a 2-worker launch
@pytest.mark.parametrize("config", STOP_REQUESTED,
                         ids=["float32", "fp16-batch-norm", "bf16", "fp16-vars"])
def test_one_workers_stop_request_reaches_every_workers_decision_in_every_precision(
        config, stop_outputs):
    """What tells ClusterStop to stop every worker at one step: the step's
    stop_requests, the same on both workers from the step the request was
    made in, whatever the precision. And the examples each step reports
    (its images/sec's numerator) are the cluster's: 16, 16 and the last 2 of
    the 34, on both workers."""
    for k, out in enumerate(stop_outputs[config]):
        saved = np.load(out)
        assert list(saved["stop_requests"]) == [0.0, 1.0, 1.0], f"worker {k}"
        assert list(saved["examples"]) == [GLOBAL_BATCH, GLOBAL_BATCH,
                                           NUM_EXAMPLES - 2 * GLOBAL_BATCH], f"worker {k}"
        assert np.all(np.isfinite(saved["losses"])) and int(saved["steps"]) == 3


def _one_process(flags, model="tiny_dropout_bn", devices=2, steps=21):
    """1 process x `devices` at the global batch of 16, `steps` steps (3 an
    epoch) with the Params `flags`: (losses, weights and batch-norm statistics)."""
    from towertrain import trainer as trainer_lib
    from towertrain.input_pipeline import from_arrays
    images, labels = _data()
    epochs = -(-steps // 3)
    reference = trainer_lib.Trainer(
        _params(model=model, num_gpus=devices, batch_size=GLOBAL_BATCH // devices,
                variable_update="replicated", **{"num_epochs": epochs, **flags}),
        input_source=from_arrays(images, labels, GLOBAL_BATCH, num_epochs=epochs))
    assert reference.total_steps == steps
    losses = [float(reference.step()) for _ in range(reference.total_steps)]
    trainable, non_trainable = reference.variables.primary_variables()
    return losses, [v.numpy() for v in trainable + non_trainable if v.dtype == "float32"]


@pytest.mark.slow  # the shared 2-worker launch; 1-process references
@pytest.mark.parametrize("config,devices,steps", [(SYNC_BN[0], 2, 21), (SYNC_BN[1], 4, 3)],
                         ids=["2x1-vs-1x2", "2x2-vs-1x4"])
def test_sync_batch_norm_across_workers_equals_one_process(config, devices, steps,
                                                           wire_outputs):
    """--sync_batch_norm: each batch-norm layer's sum, sum of squares and count
    summed over this worker's towers, then over the workers (forward, and
    its gradient back), so 2 workers x 1 device == 1 process x 2 devices
    after 21 steps (each third one of 2 examples, one per tower: uneven, the
    counts weigh them) and 2 x 2 == 1 x 4 after 3 steps, the third of 2
    examples: worker 1's two towers are empty and still send their (zero)
    moments, the same 9 values per layer as worker 0's. The 1 x 4 process
    adds the four towers' moments in one add_n, 2 x 2 adds each worker's pair
    first: another order of float32 sums (measured: max difference 7.5e-9
    after 3 steps; 1.2e-7 for 2 x 1 after 21). And not the unsynchronized run."""
    flags = {"sync_batch_norm": True}
    losses, expected = _one_process(flags, "ckpt_tiny", devices, steps)
    outs = wire_outputs[config]
    assert_workers_equal(outs, steps, losses, expected, copies=devices // 2)
    saved = np.load(outs[0])
    flags.pop("sync_batch_norm")
    _, apart = _one_process(flags, "ckpt_tiny", devices, steps)
    assert max(float(np.abs(saved[f"copy0_{i}"] - v).max()) for i, v in enumerate(apart)) > 1e-3


@pytest.mark.slow  # the shared 2-worker launch; 1-process references
@pytest.mark.parametrize("config", HALF_WIRE + [HALF_WIRE_BF16],
                         ids=["pscpu-xring", "flat", "scatter-xring", "bfloat16"])
def test_half_precision_on_the_wire_two_workers_equal_one_process_with_two_devices(
        config, wire_outputs):
    """--compact_gradient_transfer, 2 workers x 1 device == 1 process x 2
    devices with the same transfer, 21 steps (uneven ones included), dropout
    and batch norm: each spec adds the two towers' half-precision packs once,
    as the one process's pscpu does. And within a stated tolerance of
    float32 after the 21 steps."""
    wire = {k: v for k, v in _flags(config[5]).items() if k not in ("num_gpus", "batch_size")}
    epochs = config[3]
    losses, expected = _one_process(wire, steps=3 * epochs)
    assert_workers_equal(wire_outputs[config], 3 * epochs, losses, expected, copies=1)
    if epochs == 1:
        return
    float_losses, float_expected = _one_process({})
    saved = np.load(wire_outputs[config][0])
    # Measured: at most 9.4e-5 in float16, 2.4e-3 in bfloat16 (weights up to 1).
    tolerance = 5e-3 if wire.get("compact_transfer_dtype") == "bfloat16" else 3e-4
    for i, value in enumerate(float_expected):
        np.testing.assert_allclose(saved[f"copy0_{i}"], value, rtol=0, atol=tolerance)
    np.testing.assert_allclose(saved["losses"], float_losses, rtol=tolerance)


@pytest.mark.slow  # the shared 2-worker launch's last run
def test_a_float16_sum_that_overflows_is_skipped_on_every_worker(wire_outputs):
    """An image of 1e8s in worker 1's share: its gradient is finite in float32
    (so is the loss) but beyond float16's range, so the summed float16 pack
    is inf on every device of both workers, and every copy skips the step."""
    first, second = (np.load(out) for out in wire_outputs[OVERFLOW])
    assert list(first["applied"]) == [False] and list(second["applied"]) == [False]
    assert np.isfinite(first["losses"][0]) and first["losses"][0] == second["losses"][0]
    for name in first.files:
        if name.startswith("copy"):
            np.testing.assert_array_equal(first[name], second[name], err_msg=name)


def _cli(hosts, task, train_dir, log_path, num_batches):
    args = helpers.cli.command("--model=trivial", "--device=cpu",
            "--num_gpus=1", "--batch_size=8", f"--num_batches={num_batches}",
            "--num_warmup_batches=2", "--display_every=1",
            "--variable_update=collective_all_reduce", f"--worker_hosts={hosts}",
            f"--task_index={task}", "--collective_timeout_secs=10",
            f"--train_dir={train_dir}", "--save_model_steps=5")
    log = open(log_path, "w")
    return subprocess.Popen(args, cwd=REPO, env=_env(), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def test_killed_worker_stops_the_other_and_restart_resumes(tmp_path):
    train_dir = str(tmp_path / "train")
    hosts = _hosts(2)
    logs = [str(tmp_path / f"run1_worker{k}.log") for k in range(2)]
    procs = [_cli(hosts, k, train_dir, logs[k], num_batches=3000) for k in range(2)]
    try:
        deadline = time.monotonic() + 180
        while not [s for s in committed_steps(train_dir) if s >= 5]:
            assert time.monotonic() < deadline, open(logs[0]).read()[-3000:]
            assert procs[0].poll() is None and procs[1].poll() is None, (
                open(logs[0]).read()[-2000:] + open(logs[1]).read()[-2000:])
            time.sleep(0.2)
        os.kill(procs[1].pid, signal.SIGKILL)
        killed_at = time.monotonic()
        procs[0].wait(timeout=10 + 50)  # the collective timeout, plus the health check
        stopped_after = time.monotonic() - killed_at
    finally:
        _kill_all(procs)
    chief_log = open(logs[0]).read()
    assert procs[0].returncode not in (0, None), chief_log[-2000:]
    assert "worker task 1 (" in chief_log and "unreachable" in chief_log, chief_log[-2000:]
    assert stopped_after < 60
    last = max(committed_steps(train_dir))
    assert last < 3002, "the run finished before the kill"

    # Restart both: they resume from the chief's last checkpoint and finish.
    hosts = _hosts(2)
    logs = [str(tmp_path / f"run2_worker{k}.log") for k in range(2)]
    procs = [_cli(hosts, k, train_dir, logs[k], num_batches=last + 2) for k in range(2)]
    try:
        _wait_all(procs, timeout=240)
    finally:
        _kill_all(procs)
    chief_log, worker_log = open(logs[0]).read(), open(logs[1]).read()
    assert procs[0].returncode == 0, chief_log[-3000:]
    assert procs[1].returncode == 0, worker_log[-3000:]
    assert f"from step {last}" in chief_log, chief_log[-3000:]
    assert f"ckpt-{last}" in worker_log, worker_log[-3000:]
    assert max(committed_steps(train_dir)) == last + 2 + 2
    # That the checkpoint is the one-process format, which one process with
    # both devices resumes exactly, is tests/cluster/test_topology_change.py's.


def test_cluster_from_flags_and_tf_config():
    import json
    import pytest
    from towertrain.plan import cluster
    from towertrain.config.params import ParamsError
    p = _params(variable_update="collective_all_reduce", worker_hosts="10.0.0.1:2222,"
                "10.0.0.2:2222", task_index=1)
    c = cluster.resolve(p)
    assert (c.workers, c.task_index, c.is_chief) == (("10.0.0.1:2222", "10.0.0.2:2222"), 1,
                                                     False)
    config = json.dumps({"cluster": {"worker": ["a:1", "b:2", "c:3"]},
                         "task": {"type": "worker", "index": 2}})
    c = cluster.resolve(_params(variable_update="collective_all_reduce"),
                            environ={"TF_CONFIG": config})
    assert (c.num_workers, c.task_index, c.address) == (3, 2, "c:3")
    with pytest.raises(ParamsError, match="TF_CONFIG is set, which describes a cluster"):
        cluster.resolve(_params(), environ={"TF_CONFIG": config})  # as --worker_hosts
    with pytest.raises(ParamsError, match="--task_index=2: must be in 0..1"):
        _params(variable_update="collective_all_reduce", worker_hosts="a:1,b:2", task_index=2)
    with pytest.raises(ParamsError, match="--worker_hosts=a:1,b:2: needs --variable_update"):
        _params(worker_hosts="a:1,b:2")
    with pytest.raises(ParamsError, match="not host:port"):
        _params(variable_update="collective_all_reduce", worker_hosts="a,b:2")
    with pytest.raises(cluster.ClusterError, match="TF_CONFIG: task type 'ps'"):
        cluster.from_tf_config(json.dumps({"cluster": {"worker": ["a:1"]},
                                           "task": {"type": "ps", "index": 0}}))
    # A multi-worker Trainer in a process that never joined the cluster says so.
    with pytest.raises(ParamsError, match="has not joined the cluster"):
        from towertrain.engine.distributed import cluster as joining
        joining.joined(cluster.resolve(p), p.worker_hosts)


def test_worker_shard_takes_contiguous_global_towers():
    from towertrain.engine.feed import input_factory as factory
    from towertrain.input_pipeline import from_arrays
    images = np.arange(10, dtype=np.float32).reshape(10, 1)
    labels = np.arange(10, dtype=np.int32)
    seen = []
    for task in range(2):
        shard = factory.WorkerInput(from_arrays(images, labels, 10, num_epochs=1), 2, task)
        shard.create(["/cpu:0", "/cpu:1"])
        assert shard.global_batch == 10 and shard.steps_per_epoch == 1
        towers = shard.tower_batches(["/cpu:0", "/cpu:1"])
        seen.append([t[1].numpy().tolist() for t in towers])
    # split_sizes(10, 4) = [3, 3, 2, 2]: worker 0 has global towers 0-1, worker 1 towers 2-3.
    assert seen == [[[0, 1, 2], [3, 4, 5]], [[6, 7], [8, 9]]]


if __name__ == "__main__" and len(sys.argv) == 11 and sys.argv[1] == "worker":
    _run_worker(sys.argv[2], int(sys.argv[3]), *sys.argv[4:])
