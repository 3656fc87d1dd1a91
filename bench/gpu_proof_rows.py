"""The GPU proof's rows, run inside the processes bench/gpu_proof.py starts.

Each row trains a few steps from the same initial weights on fixed in-memory
batches and writes its weights and losses (SCRATCH/<row>.npz); gpu_proof.py
compares rows with their references. On a GPU the towers are /gpu:i (one GPU
split into logical GPUs where a row has several towers); with --stand_in
every "GPU" is a logical CPU and the layout NHWC (the CPU's), and that is the
only difference: the same rows, the same code.
"""
import collections
import os
import time

import numpy as np

from towertrain import models  # first: sets TF_ENABLE_ONEDNN_OPTS before TensorFlow loads
import keras  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEARNING_RATE = 0.01
TOWERS = 4  # logical GPUs of the multi-tower rows

# name: (what it proves, model, towers, per-device batch x, Params overrides,
#        reference row, relative tolerance of the weights against it)
# model: "bn" (--model, batch norm: one tower, or synchronized), "towers"
# (--towers_model: no batch norm, so N towers equal one tower of N times the
# batch), "ids" (towers model over examples that carry their ids).
Row = collections.namedtuple("Row", "what model towers batch overrides reference tolerance")
# One tower: psgpu, whose sum over one device is the identity (the GPU default,
# nccl, would still run an NcclAllReduce of one member, and an install without
# NCCL has none).
REPLICATED = dict(variable_update="replicated", all_reduce_spec="psgpu")
ROWS = {
    "kernels": Row("V2 collectives (all-reduce, reduce-scatter, gather), group size 1, "
                   "ordering token; NcclAllReduce", None, 1, 1, {}, None, None),
    "cpu_f32": Row("one tower float32 on the CPU (reference)", "bn", 1, 1,
                   dict(REPLICATED, device="cpu"), None, None),
    "f32": Row("one tower float32", "bn", 1, 1, REPLICATED, "cpu_f32", 1e-4),
    "fp16": Row("one tower --use_fp16, loss scale 128", "bn", 1, 1,
                dict(REPLICATED, use_fp16=True, fp16_loss_scale=128.0), "f32", 2e-2),
    "fp16_auto": Row("one tower --use_fp16 --fp16_enable_auto_loss_scale", "bn", 1, 1,
                     dict(REPLICATED, use_fp16=True, fp16_enable_auto_loss_scale=True),
                     "f32", 2e-2),
    "one_x4": Row("one tower, 4 x the batch (reference)", "towers", 1, TOWERS, REPLICATED,
                  None, None),
    "psgpu_x4": Row("4 logical GPUs, replicated psgpu", "towers", TOWERS, 1,
                    dict(REPLICATED, all_reduce_spec="psgpu"), "one_x4", 1e-4),
    "ring_x4": Row("4 logical GPUs, replicated ring", "towers", TOWERS, 1,
                   dict(REPLICATED, all_reduce_spec="ring"), "one_x4", 1e-4),
    "placement": Row("psgpu x 4, soft placement off: nothing asked of a GPU ran elsewhere",
                     "towers", TOWERS, 1, dict(REPLICATED, all_reduce_spec="psgpu"),
                     None, None),
    "bf16": Row("one tower --use_bf16", "bn", 1, 1, dict(REPLICATED, use_bf16=True), "f32",
                5e-2),
    "xla": Row("one tower --xla_compile", "bn", 1, 1, dict(REPLICATED, xla_compile=True),
               "f32", 1e-3),
    "ps_cpu": Row("one tower, parameter_server, variables on the CPU", "bn", 1, 1,
                  dict(variable_update="parameter_server", local_parameter_device="cpu"),
                  "f32", 1e-4),
    "ps_gpu": Row("one tower, parameter_server, variables on the GPU", "bn", 1, 1,
                  dict(variable_update="parameter_server", local_parameter_device="gpu"),
                  "f32", 1e-4),
    "ids_x4": Row("one tower, 4 x the batch, 1.5 epochs of examples with ids (reference)",
                  "ids", 1, TOWERS, REPLICATED, None, None),
    "staging": Row("one tower, 4 x the batch, staged: 1.5 epochs, each example seen as "
                   "often as unstaged", "ids", 1, TOWERS, dict(REPLICATED, staging_depth=1),
                   "ids_x4", 1e-4),
    "staging_x4": Row("4 logical GPUs, psgpu, staged, 1.5 epochs of examples with ids",
                      "ids", TOWERS, 1, dict(REPLICATED, all_reduce_spec="psgpu",
                                             staging_depth=1), "ids_x4", 1e-4),
    "ps_gpu_x4": Row("4 logical GPUs, parameter_server, variables spread over them",
                     "towers", TOWERS, 1, dict(variable_update="parameter_server",
                                               local_parameter_device="gpu"), "one_x4", 1e-4),
    "one_bn_x4": Row("one tower with batch norm, 4 x the batch (reference)", "bn", 1, TOWERS,
                     REPLICATED, None, None),
    "sync_bn_x4": Row("4 logical GPUs, psgpu, --sync_batch_norm", "bn", TOWERS, 1,
                      dict(REPLICATED, all_reduce_spec="psgpu", sync_batch_norm=True),
                      "one_bn_x4", 1e-4),
    "collective_x4": Row("4 logical GPUs, collective_all_reduce, flat, ring implementation",
                         "towers", TOWERS, 1,
                         dict(variable_update="collective_all_reduce",
                              all_reduce_spec="collective", collective_implementation="ring"),
                         "one_x4", 1e-4),
    "workers_2x2": Row("2 processes x 2 logical GPUs on 127.0.0.1, psgpu/xring, ring",
                       "towers", 2, 1, dict(variable_update="collective_all_reduce",
                                            all_reduce_spec="psgpu/xring",
                                            collective_implementation="ring"),
                       "psgpu_x4", 1e-4),
}


def build_tiny(num_classes, data_format, image_size, batch_norm=True):
    """conv (+ fused batch norm) + pool + dense: the stand-in's models, which
    train in milliseconds (the suite runs the whole proof)."""
    axis = 1 if data_format == "channels_first" else -1
    return keras.Sequential([
        keras.Input(models.input_shape(image_size, data_format)),
        keras.layers.Conv2D(4, 3, data_format=data_format, name="conv"),
        *([models.FusedBatchNormalization(axis=axis, name="bn")] if batch_norm else []),
        keras.layers.Activation("relu", name="relu"),
        keras.layers.GlobalAveragePooling2D(data_format=data_format, name="pool"),
        keras.layers.Dense(num_classes, name="logits"),
    ], name="proof_tiny_bn" if batch_norm else "proof_tiny")


for _name, _bn in (("proof_tiny_bn", True), ("proof_tiny", False)):
    models.register_model(_name, lambda num_classes, data_format, image_size, bn=_bn:
                          build_tiny(num_classes, data_format, image_size, bn),
                          default_image_size=8, default_batch_size=4,
                          default_learning_rate=LEARNING_RATE, default_dataset="cifar10",
                          overwrite=True)


def stand_in_overrides(overrides):
    """The row on CPU devices standing in for GPUs: GPU-only placements and
    sums become their CPU names (the same arithmetic), half precision is let
    run emulated."""
    out = dict(overrides)
    if out.get("local_parameter_device") == "gpu":
        out["local_parameter_device"] = "cpu"
    spec = out.get("all_reduce_spec")
    if spec and spec.startswith("psgpu"):
        out["all_reduce_spec"] = spec.replace("psgpu", "pscpu")
    if out.get("use_fp16") or out.get("use_bf16"):
        out["allow_emulated_precision"] = True
    return out


def data_format(args, device):
    """NCHW on GPUs (cuDNN's); a stand-in's CPU towers and its CPU reference: NHWC."""
    return "NHWC" if args.stand_in else "NCHW"


def make_params(args, row, workers=None):
    from towertrain import Params
    overrides = dict(row.overrides)
    device = "cpu" if args.stand_in else overrides.pop("device", "gpu")
    if device == "cpu":  # a stand-in, or the CPU reference on a GPU machine
        overrides = stand_in_overrides(overrides)
        overrides.pop("device", None)
    if workers:
        overrides.update(worker_hosts=workers[0], task_index=workers[1])
    model = {"bn": args.model, "towers": args.towers_model, "ids": None}[row.model]
    return Params(model=model, device=device, num_gpus=row.towers,
                  data_format=data_format(args, device),
                  batch_size=args.batch_size * row.batch, data_name="cifar10",
                  optimizer="momentum", init_learning_rate=LEARNING_RATE,
                  num_warmup_batches=0, num_batches=steps_of(args, row), **overrides)


def steps_of(args, row):
    """--steps, or 1.5 epochs (3 steps) for the rows over examples with ids."""
    return 3 if row.model == "ids" else args.steps


def fixed_arrays(global_batch, fmt, size=32):
    """The same global batches whatever the towers and workers (seeded by
    the global batch)."""
    rng = np.random.default_rng(global_batch)
    images = rng.standard_normal((4 * global_batch, size, size, 3)).astype(np.float32)
    if fmt == "NCHW":
        images = np.ascontiguousarray(images.transpose(0, 3, 1, 2))
    return images, rng.integers(0, 10, 4 * global_batch).astype(np.int32)


def configure(args, towers, share=1):
    """Before TensorFlow starts: `towers` logical devices (a split GPU, or
    logical CPUs), each with 1/(towers x share) of the GPU's memory (share:
    processes on the GPU). TF32 off: float32 rows agree to float32 rounding."""
    import tensorflow as tf
    from towertrain.engine.process import devices
    if args.stand_in:
        devices.ensure_logical_cpus(towers)
        return
    tf.config.experimental.enable_tensor_float_32_execution(False)
    gpu = tf.config.list_physical_devices("GPU")[0]
    if towers > 1:
        limit = devices.logical_gpu_memory_mb(towers * share, devices.gpu_memory_mb())
        tf.config.set_logical_device_configuration(
            gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=limit)] * towers)


def train(args, name, row, workers=None):
    """Trains the row's steps; returns (result, weights, losses)."""
    import tensorflow as tf
    from towertrain import Trainer
    from towertrain.input_pipeline import from_arrays
    params = make_params(args, row, workers)
    global_batch = args.batch_size * row.batch * row.towers * (2 if workers else 1)
    extra, model, loss_fn, seen = {}, None, None, None
    if row.model == "ids":
        model, loss_fn, seen, source = ids_setup(args.towers_model, params, global_batch)
    else:
        size = models.get_spec(params.model).default_image_size
        source = from_arrays(*fixed_arrays(global_batch, params.data_format, size), global_batch)
    trainer = Trainer(params, model=model, input_source=source, loss_fn=loss_fn)
    if seen is not None:  # the Trainer's own checks may call the loss: steps only
        seen.assign(tf.zeros_like(seen))
    try:
        losses = [float(trainer.step()) for _ in range(steps_of(args, row))]
        copies = [[v.numpy() for v in copy] for copy in trainer.variables.trainable_copies()]
        extra["replicas_identical"] = (all(np.array_equal(a, b) for copy in copies[1:]
                                           for a, b in zip(copies[0], copy))
                                       if len(copies) > 1 else None)
        if seen is not None:
            half = global_batch  # 1.5 epochs of 2 x global_batch examples, in order
            counts = seen.numpy().tolist()
            extra["ids_seen_ok"] = counts == [2] * half + [1] * half
            if not extra["ids_seen_ok"]:
                extra["note"] = f"times each id was trained on: {counts}"
        extra["devices"] = [str(d) for d in trainer.devices]
    finally:
        trainer.close()
    weights = np.concatenate([w.ravel().astype(np.float64) for w in copies[0]])
    return extra, weights, losses


def ids_setup(model_name, params, global_batch):
    """2 x global_batch examples whose label is their id (as many classes),
    and a loss that counts each id a tower trains on: 1.5 epochs in order
    must see the first half twice and the second once."""
    import tensorflow as tf
    from towertrain.engine.step import tower
    from towertrain.input_pipeline import from_arrays
    count = 2 * global_batch
    images, _ = fixed_arrays(count, params.data_format,
                             models.get_spec(model_name).default_image_size)
    images = images[:count]
    keras.utils.set_random_seed(0)  # the same initial weights in every row
    with tf.device("/cpu:0"):
        model = models.build(model_name, num_classes=count, data_format=params.data_format)
        seen = tf.Variable(tf.zeros([count], tf.int32), trainable=False, name="ids_seen")

    def loss_fn(labels, logits):
        seen.assign_add(tf.math.bincount(tf.cast(labels, tf.int32), minlength=count,
                                         maxlength=count))
        return tower.sparse_softmax_cross_entropy(labels, logits)
    return model, loss_fn, seen, from_arrays(images, np.arange(count, dtype=np.int32),
                                             global_batch)


def has_nccl():
    """Whether TensorFlow can run NCCL here: a CUDA build that loads
    libnccl.so.2 as TensorFlow would (towertrain.engine.process.nccl_library),
    not whether an nvidia.nccl package is installed."""
    from towertrain.engine.process import nccl_library
    return nccl_library.has_nccl()


def kernels(args):
    """V2 collectives of group size 1 with an ordering token on the first
    tower device, and NcclAllReduce, each result equal to its input. Reduce-
    scatter exists only through NCCL (TensorFlow has no CPU or ring one), so
    it and NcclAllReduce run where the install has NCCL."""
    import tensorflow as tf
    from towertrain import private_api
    device = "/cpu:0" if args.stand_in else "/gpu:0"
    nccl = not args.stand_in and has_nccl()
    x = tf.constant(np.arange(8, dtype=np.float32))
    with tf.device(device):
        token = tf.Variable(0.0, name="ordering_token")

    @tf.function
    def run():
        with tf.device(device):
            y = tf.identity(x)  # on the device: NcclAllReduce runs where its input is
            out = {"all_reduce": private_api.collective_all_reduce(
                       y, 1, 900001, 1, ordering_token=token.handle, communication_hint="ring"),
                   "gather": private_api.collective_all_gather(
                       y, 1, 900002, 2, token.handle, communication_hint="ring")}
            if nccl:
                out["reduce_scatter"] = private_api.collective_reduce_scatter(
                    y, 1, 900003, 3, token.handle, communication_hint="nccl")
                out["nccl_all_reduce"] = private_api.nccl_all_sum([y])[0]
        return out
    values = {k: v.numpy() for k, v in run().items()}
    wrong = [k for k, v in values.items() if not np.array_equal(v, x.numpy())]
    note = ", ".join(sorted(values)) + " equal their input"
    if not nccl:
        note += ("; reduce-scatter and NcclAllReduce not run: "
                 + ("no NCCL on CPU devices" if args.stand_in else "no NCCL in this install"))
    return {"ok": not wrong, "note": note if not wrong else f"wrong values: {', '.join(wrong)}"}


# Ops that only move or name values: where the placer puts them says nothing.
_BOOKKEEPING = {"_Arg", "_Retval", "_Send", "_Recv", "_HostSend", "_HostRecv", "Const",
                "NoOp", "Identity", "IdentityN", "_DeviceArg", "_DeviceRetval"}


def placement_facts(metadata, tower_devices):
    """From one step's run metadata (partition graphs): the ops the runtime
    placed on the host CPU, and the copies from a tower device other than
    the host to the host (device-to-host copies per step)."""
    def short(name):
        return name.split("/device:")[-1].upper()
    towers = {short(tf_device(d)) for d in tower_devices}
    host, on_host, to_host = "CPU:0", collections.Counter(), 0
    for function in metadata.function_graphs:
        for graph in function.partition_graphs:
            for node in graph.node:
                if node.op in ("_Send", "_HostSend"):
                    send = short(node.attr["send_device"].s.decode())
                    recv = short(node.attr["recv_device"].s.decode())
                    to_host += send in towers and send != host and recv == host
                elif short(node.device) == host and node.op not in _BOOKKEEPING:
                    on_host[node.op] += 1
    return on_host, to_host


def tf_device(name):
    import tensorflow as tf
    return tf.DeviceSpec.from_string(name).to_string()


class PlacementError(Exception):
    """An op asked of a device could not run there (soft placement off)."""


def step_placement(step, tower_devices):
    """Runs `step` (a call that instantiates its function) with soft
    placement off, so an op asked of a tower device that has no kernel there
    fails instead of running on the CPU, and with run metadata on, whose
    partition graphs say where every op ran: placement_facts, or PlacementError."""
    import tensorflow as tf
    from towertrain import private_api
    soft = tf.config.get_soft_device_placement()
    tf.config.set_soft_device_placement(False)
    context = private_api.eager_context()
    context.enable_run_metadata()  # before the step's function is instantiated
    try:
        step()
        return placement_facts(context.export_run_metadata(), tower_devices)
    except tf.errors.InvalidArgumentError as err:
        raise PlacementError("an op asked of a device ran elsewhere: "
                             + str(err).strip().splitlines()[0][:300]) from None
    finally:
        context.disable_run_metadata()
        tf.config.set_soft_device_placement(soft)


def placement(args, row):
    """One step of the row, built and run with soft placement off."""
    import tensorflow as tf
    from towertrain import Trainer
    from towertrain.input_pipeline import from_arrays
    params = make_params(args, row)
    global_batch = args.batch_size * row.towers
    size = models.get_spec(params.model).default_image_size
    soft = tf.config.get_soft_device_placement()
    tf.config.set_soft_device_placement(False)  # the variables and input too
    trainer = None
    try:
        trainer = Trainer(params, input_source=from_arrays(
            *fixed_arrays(global_batch, params.data_format, size), global_batch))
        on_host, to_host = step_placement(trainer.step, trainer.devices)
    except PlacementError as err:
        return {"ok": False, "note": str(err)}
    finally:
        tf.config.set_soft_device_placement(soft)
        if trainer is not None:
            trainer.close()
    ops = ", ".join(f"{op} {n}" for op, n in on_host.most_common(5))
    return {"ok": True, "note": f"every op asked of a tower device ran there; "
            f"{sum(on_host.values())} ops on the host CPU ({ops or 'none'}); {to_host} "
            "device-to-host copies per step", "copies_to_host": to_host}


def run_stage(args, names):
    """Runs rows in order, yielding each one's result ({"row", "ok"?,
    "note"?, ...}); a row that raises is a failed row, the next one still runs."""
    for name in names:
        row = ROWS[name]
        started = time.perf_counter()
        try:
            if name == "kernels":
                result = kernels(args)
            elif name == "placement":
                result = placement(args, row)
            else:
                workers = (args.worker_hosts, args.task_index) if args.worker_hosts else None
                result, weights, losses = train(args, name, row, workers)
                if not workers or args.task_index == 0:  # the chief's: every worker's
                    np.savez(os.path.join(args.scratch, f"{name}.npz"), weights=weights,
                             losses=np.asarray(losses))
        except Exception as err:  # noqa: BLE001 - the row fails, the proof goes on
            result = {"ok": False, "note": f"{type(err).__name__}: "
                      + (str(err).strip().splitlines() or [""])[0][:300]}
        result.update(row=name, seconds=time.perf_counter() - started)
        yield result
