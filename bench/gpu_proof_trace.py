"""The GPU proof's trace mode, for a machine without a GPU: each GPU path's
step traced for GPU device names (nothing runs), its ops counted per device;
the collective paths traced for 2 workers x 2 GPUs and their graphs checked:
no collective left to be pruned, one ordering chain per GPU, NCCL hints.
bench/gpu_proof.py runs it when TensorFlow lists no GPU and --stand_in is not given.
"""
import collections

# The trace mode's paths (no GPU): name -> (what, Params overrides, towers).
REPLICATED_PSGPU = dict(variable_update="replicated", all_reduce_spec="psgpu")
COLLECTIVE_NCCL = dict(variable_update="collective_all_reduce", all_reduce_spec="nccl/xring")
# name -> (what it proves, Params overrides, towers: "all" GPUs or "logical" 2)
PATHS = {
    "nchw_ps_cpu": ("NCHW towers, variables on the CPU (parameter_server)",
                    dict(variable_update="parameter_server", local_parameter_device="cpu"),
                    "all"),
    "staging_gpu": ("input staged on each GPU (--staging_depth=1), replicated psgpu",
                    dict(REPLICATED_PSGPU, staging_depth=1), "all"),
    "ps_gpu": ("parameter_server, variables spread over the GPUs",
               dict(variable_update="parameter_server", local_parameter_device="gpu"), "all"),
    "nccl": ("replicated, NCCL all-reduce (distinct GPUs)",
             dict(variable_update="replicated", all_reduce_spec="nccl"), "all"),
    "psgpu": ("replicated, psgpu all-reduce", REPLICATED_PSGPU, "all"),
    "ring": ("replicated, ring all-reduce", dict(variable_update="replicated",
                                                 all_reduce_spec="ring"), "all"),
    "psgpu_logical": ("psgpu on 2 logical GPUs splitting GPU 0", REPLICATED_PSGPU, "logical"),
    "ring_logical": ("ring on 2 logical GPUs splitting GPU 0",
                     dict(variable_update="replicated", all_reduce_spec="ring"), "logical"),
    "fp16": ("--use_fp16, loss scale 128, replicated psgpu",
             dict(REPLICATED_PSGPU, use_fp16=True, fp16_loss_scale=128.0), "all"),
    "xla": ("--xla_compile, replicated psgpu", dict(REPLICATED_PSGPU, xla_compile=True), "all"),
    "xring_nccl": ("collective_all_reduce nccl/xring, one process (local NCCL sum)",
                        COLLECTIVE_NCCL, "all"),
    "xring_scatter": ("collective_all_reduce scatter/xring, one process (NCCL "
                      "reduce-scatter and gather)",
                      dict(variable_update="collective_all_reduce",
                           all_reduce_spec="scatter/xring"), "all"),
    "xring_2workers": ("collective_all_reduce, 2 worker processes x 1 GPU",
                         COLLECTIVE_NCCL, "workers"),
}
# Ops a path's traced step must place on the GPUs (checked without a GPU).
EXPECTED_GPU_OPS = {"nccl": ("NcclAllReduce",), "staging_gpu": ("Unstage",)}


def make_params(args, overrides, device, towers, workers=1):
    """The path's Params; with workers > 1, those of worker args.task_index."""
    from towertrain import Params, models
    size = models.get_spec(args.model).default_image_size
    if workers > 1:
        overrides = dict(overrides, worker_hosts=args.worker_hosts,
                         task_index=args.task_index)
    return Params(model=args.model, device=device, num_gpus=towers, data_format="NCHW",
                  batch_size=args.batch_size, data_name="cifar10" if size <= 32 else None,
                  optimizer="momentum", init_learning_rate=0.01, num_warmup_batches=0,
                  num_batches=args.steps + args.timing_steps, **overrides)


def fixed_input(args, params, workers=1):
    """The same in-memory global batches on every device kind and topology."""
    import numpy as np
    from towertrain import models
    from towertrain.input_pipeline import from_arrays
    size = models.get_spec(args.model).default_image_size
    global_batch = args.batch_size * params.num_gpus * workers
    rng = np.random.default_rng(0)
    images = rng.standard_normal((4 * global_batch, 3, size, size)).astype(np.float32)
    labels = rng.integers(0, 10, 4 * global_batch).astype(np.int32)
    return from_arrays(images, labels, global_batch)


def make_trainer(args, overrides, device, towers, check_devices=True, workers=1):
    """A Trainer on fixed in-memory batches (the same on every device kind)."""
    from towertrain import Trainer
    params = make_params(args, overrides, device, towers, workers)
    return Trainer(params, input_source=fixed_input(args, params, workers),
                   check_devices=check_devices)


def trace_only(args):
    """No GPU: trace each path's step for /gpu:0../gpu:1 and count its ops per device."""
    from towertrain.engine.process import devices as devices_lib
    devices_lib.ensure_logical_cpus(2)  # the CPU side of the traced graphs
    print(f"no GPU found{devices_lib.no_gpu_note()}: nothing can run on one here. Tracing "
          "each path's step with GPU device names instead (the graphs a GPU machine runs).")
    missing = 0
    for path, (what, overrides, kind) in PATHS.items():
        if overrides.get("variable_update") == "collective_all_reduce":
            missing += not trace_collective(args, path, what, overrides)
            continue
        trainer = make_trainer(args, overrides, "gpu", 2, check_devices=False)
        graph_def = trainer.trace_step().graph.as_graph_def()
        # The step's ops and those of the functions nested in it (the exchange
        # sits in a tf.cond branch).
        nodes = list(graph_def.node) + [n for f in graph_def.library.function
                                        for n in f.node_def]
        counts = {}
        for node in nodes:
            device = node.device.split("/device:")[-1] if node.device else "unplaced"
            counts[device] = counts.get(device, 0) + 1
        gpu_ops = sum(n for d, n in counts.items() if d.upper().startswith("GPU"))
        on_gpu = {n.op for n in nodes if "GPU" in n.device.upper()}
        lacking = [op for op in EXPECTED_GPU_OPS.get(path, ()) if op not in on_gpu]
        missing += bool(lacking)
        placed = ", ".join(f"{d}: {n}" for d, n in sorted(counts.items()))
        print(f"{path:<15}traced, {gpu_ops} ops on GPUs ({placed}) - {what}"
              + (f"; MISSING on the GPUs: {', '.join(lacking)}" if lacking else ""))
        trainer.close()
    if missing:
        print(f"{missing} path(s) lack their GPU ops")
        return 1
    print("traced every path; run this on a machine with a GPU to prove them")
    return 0


def trace_collective(args, path, what, overrides):
    """Traces worker 0 of 2 workers x 2 GPUs and checks the step's collectives
    (towertrain.engine.exchange.graph_facts); True if they hold."""
    from towertrain.engine.exchange import graph_facts as collective_graph
    args.worker_hosts, args.task_index = "127.0.0.1:1,127.0.0.1:2", 0
    params = make_params(args, overrides, "gpu", 2, workers=2)
    from towertrain import Trainer
    from towertrain.plan import cluster as plan_cluster
    with collective_graph.stand_in_cluster(plan_cluster.resolve(params)):
        trainer = Trainer(params, input_source=fixed_input(args, params, workers=2),
                          check_devices=False)
        graph = trainer.trace_step().graph
    found = collective_graph.collectives(graph)
    problems = []
    if collective_graph.pruned(graph):
        problems.append(f"{len(collective_graph.pruned(graph))} collectives left to be pruned")
    if collective_graph.unordered_on_gpus(graph):
        problems.append("collectives on one GPU not ordered")
    if ("GPU", "nccl") not in collective_graph.hints(graph):
        problems.append("no cross-worker collective carries the nccl hint")
    trainer.close()
    kinds = ", ".join(f"{n} {t}" for t, n in sorted(
        collections.Counter(op.type for _, op in found).items()))
    print(f"{path:<15}traced, 2 workers x 2 GPUs: {kinds} - {what}"
          + (f"; MISSING: {'; '.join(problems)}" if problems else
             "; every collective kept, one chain per GPU, NCCL across workers"))
    return not problems
