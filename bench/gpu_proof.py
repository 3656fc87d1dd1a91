"""The GPU proof: every GPU path against the CPU result of the same steps.

    python bench/gpu_proof.py                 # on a machine with GPUs
    python bench/gpu_proof.py --model=lenet --steps=4 --batch_size=16

The first thing a machine with a GPU runs. Each path trains --steps steps of
--model from the same initial weights on the same fixed batches (in-memory
arrays, NCHW), then its weights and per-step losses are compared with the
same steps run on logical CPU devices; afterwards it times --timing_steps
more steps and reports images/sec. Paths:

  nchw_ps_cpu      NCHW towers, variables on the CPU (parameter_server)
  staging_gpu      input staged on each GPU (--staging_depth=1), replicated psgpu
  ps_gpu           parameter_server with variables spread over the GPUs
  nccl             replicated, all-reduce with NCCL (needs 2+ distinct GPUs)
  psgpu, ring      replicated, psgpu / ring all-reduce over the real GPUs
  psgpu_logical,   the same over 2 logical GPUs that split GPU 0 (NCCL needs
  ring_logical     distinct GPUs, so only these two run there)
  fp16             --use_fp16 with a loss scale of 128, replicated psgpu
  xla              --xla_compile, replicated psgpu
  xring_nccl       collective_all_reduce nccl/xring in one process: the local
                   NCCL sum, every member's output used (needs 2+ GPUs)
  xring_scatter    collective_all_reduce scatter/xring in one process: the
                   local NCCL reduce-scatter and gather (CollectiveReduceScatterV2,
                   CollectiveGatherV2; needs 2+ GPUs)
  xring_2workers   collective_all_reduce, 2 worker processes x 1 GPU on
                   127.0.0.1: the cross-worker collective with NCCL (with one
                   GPU both workers share it, and the hint is ring: NCCL
                   cannot place two ranks on one GPU); its CPU reference is
                   1 process x 2 devices, which 2 workers must equal

Every path runs in a process of its own (logical GPUs must be configured
before TensorFlow starts; memory is returned between paths). TF32 is turned
off, so float32 paths agree with the CPU to float32 rounding. Exit status: 0
when every run path matches, 1 otherwise.

Without a GPU it says so, traces each path's step for GPU device names
(nothing runs: the ops are counted per device) and exits 0; the collective
paths are traced for 2 workers x 2 GPUs and their graphs checked: no
collective left to be pruned, one ordering chain per GPU, NCCL hints. On a machine
whose driver shows a GPU that TensorFlow cannot use (tensorflow-cpu, or
CUDA libraries that did not load) it says why and exits 1.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

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
NEEDS_TWO_GPUS = ("nccl", "xring_nccl", "xring_scatter")
# Ops a path's traced step must place on the GPUs (checked without a GPU).
EXPECTED_GPU_OPS = {"nccl": ("NcclAllReduce",), "staging_gpu": ("Unstage",)}
# Relative weight difference allowed against the CPU: float32 rounding in a
# different summation order, or float16 compute.
TOLERANCE = {"fp16": 2e-2}
DEFAULT_TOLERANCE = 1e-4
LOGICAL_GPU_MEMORY_MB = 8192


def cpu_overrides(overrides):
    """The same steps on CPU devices: the GPU-only placements and all-reduces
    become their CPU counterparts (the same sums); the rest is unchanged."""
    cpu = dict(overrides)
    if cpu.get("local_parameter_device") == "gpu":
        cpu["local_parameter_device"] = "cpu"
    if cpu.get("all_reduce_spec") in ("nccl", "psgpu"):
        cpu["all_reduce_spec"] = "pscpu"
    if cpu.get("all_reduce_spec") in ("nccl/xring", "psgpu/xring"):
        cpu["all_reduce_spec"] = "pscpu/xring"
    cpu.pop("collective_implementation", None)
    return cpu


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


def child(args):
    """Runs one path (or its CPU reference) and prints a JSON line."""
    import numpy as np
    import tensorflow as tf
    _, overrides, kind = PATHS[args.path]
    workers = 2 if kind == "workers" and args.device == "gpu" else 1
    if workers > 1 and args.single_gpu:
        overrides = dict(overrides, collective_implementation="ring")
    if args.device == "gpu":
        tf.config.experimental.enable_tensor_float_32_execution(False)
        gpus = tf.config.list_physical_devices("GPU")
        if kind == "logical":
            tf.config.set_logical_device_configuration(gpus[0], [
                tf.config.LogicalDeviceConfiguration(memory_limit=LOGICAL_GPU_MEMORY_MB)] * 2)
        else:
            for gpu in gpus:
                tf.config.experimental.set_memory_growth(gpu, True)
    else:
        overrides = cpu_overrides(overrides)
    if workers > 1:  # before TensorFlow runs any op
        from towertrain.trainer import join_cluster
        join_cluster(make_params(args, overrides, args.device, args.towers, workers))
    trainer = make_trainer(args, overrides, args.device, args.towers, workers=workers)
    losses = [float(trainer.step()) for _ in range(args.steps)]
    weights = np.concatenate([v.numpy().ravel().astype(np.float64)
                              for v in trainer.variables.primary_variables()[0]])
    np.save(args.out, weights)
    speed = None
    if args.device == "gpu" and args.timing_steps:
        examples, started = 0, time.perf_counter()
        for _ in range(args.timing_steps):
            examples += trainer.step().examples  # a Python result: the step finished
        speed = examples / (time.perf_counter() - started)
    trainer.close()
    print(json.dumps({"losses": losses, "images_per_sec": speed,
                      "devices": [str(d) for d in trainer.devices]}))


def run_child(args, path, device, towers, out):
    command = [sys.executable, os.path.abspath(__file__), f"--child={path}",
               f"--device={device}", f"--towers={towers}", f"--out={out}",
               f"--model={args.model}", f"--steps={args.steps}",
               f"--batch_size={args.batch_size}", f"--timing_steps={args.timing_steps}"]
    if PATHS[path][2] == "workers" and device == "gpu":
        return run_workers(args, command)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None, (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]
    return json.loads(done.stdout.strip().splitlines()[-1]), None


def run_workers(args, command, workers=2, timeout=600):
    """The path as `workers` processes of one cluster on 127.0.0.1, each on a
    GPU of its own where there are enough (else all on GPU 0); the chief's
    result (its weights are every worker's)."""
    import socket
    ports = []
    for _ in range(workers):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    hosts = ",".join(f"127.0.0.1:{p}" for p in ports)
    shared = args.num_gpus < workers
    procs = []
    for task in range(workers):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(0 if shared else task))
        # Only the chief's weights are compared (every worker holds the same).
        own = [a if task == 0 or not a.startswith("--out=") else f"{a}.task{task}.npy"
               for a in command]
        own += [f"--worker_hosts={hosts}", f"--task_index={task}"]
        own += ["--single_gpu"] if shared else []
        procs.append(subprocess.Popen(own, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, env=env))
    outputs = []
    for proc in procs:
        try:
            outputs.append(proc.communicate(timeout=timeout))
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            return None, f"workers did not finish within {timeout}s (a collective hangs?)"
    for proc, (stdout, stderr) in zip(procs, outputs):
        if proc.returncode != 0:
            return None, (stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return json.loads(outputs[0][0].strip().splitlines()[-1]), None


def prove(args, num_gpus):
    """Runs every path on the GPUs and against the CPU; returns the exit status."""
    import numpy as np
    import tempfile
    towers_all = min(num_gpus, 8)
    print(f"{num_gpus} GPU(s); model {args.model}, batch {args.batch_size} per device, "
          f"{args.steps} compared steps, {args.timing_steps} timed")
    print(f"{'path':<15}{'towers':>7}{'images/sec':>12}{'max rel diff':>14}  result")
    failures = 0
    references = {}
    with tempfile.TemporaryDirectory() as scratch:
        for path, (what, overrides, kind) in PATHS.items():
            towers = 2 if kind == "logical" else towers_all
            if path in NEEDS_TWO_GPUS and num_gpus < 2:
                print(f"{path:<15}{'-':>7}{'-':>12}{'-':>14}  skipped: NCCL needs 2+ distinct "
                      "GPUs (the *_logical paths split one)")
                continue
            key = json.dumps([cpu_overrides(overrides), towers], sort_keys=True)
            if key not in references:
                out = os.path.join(scratch, f"cpu_{len(references)}.npy")
                result, error = run_child(args, path, "cpu", towers, out)
                references[key] = (result, error, out)
            cpu, cpu_error, cpu_out = references[key]
            out = os.path.join(scratch, f"{path}.npy")
            gpu, error = run_child(args, path, "gpu", towers, out)
            if error or cpu_error:
                failures += 1
                print(f"{path:<15}{towers:>7}{'-':>12}{'-':>14}  FAILED: "
                      f"{error or 'CPU reference: ' + cpu_error}")
                continue
            a, b = np.load(out), np.load(cpu_out)
            diff = float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12))
            ok = diff <= TOLERANCE.get(path, DEFAULT_TOLERANCE) and np.allclose(
                gpu["losses"], cpu["losses"], rtol=10 * TOLERANCE.get(path, DEFAULT_TOLERANCE))
            failures += not ok
            print(f"{path:<15}{towers:>7}{gpu['images_per_sec']:>12.1f}{diff:>14.2e}  "
                  f"{'ok' if ok else 'MISMATCH'} ({what})")
    print("all paths match the CPU" if not failures else f"{failures} path(s) failed")
    return 1 if failures else 0


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet20")
    parser.add_argument("--batch_size", type=int, default=32, help="per device")
    parser.add_argument("--steps", type=int, default=5, help="steps compared with the CPU")
    parser.add_argument("--timing_steps", type=int, default=50, help="steps timed on the GPU")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--device", help=argparse.SUPPRESS)
    parser.add_argument("--towers", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--worker_hosts", help=argparse.SUPPRESS)
    parser.add_argument("--task_index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--single_gpu", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    import towertrain  # noqa: F401 - sets TF_ENABLE_ONEDNN_OPTS before TensorFlow (NCHW on CPU)
    if args.child:
        args.path = args.child
        if args.device == "cpu":
            from towertrain.engine.process import devices as devices_lib
            devices_lib.ensure_logical_cpus(args.towers)
        child(args)
        return 0
    from towertrain.engine.process import devices as devices_lib
    num_gpus = devices_lib.num_physical_gpus()
    if not num_gpus and devices_lib.gpu_hardware_present():
        # Tracing here would pass a GPU machine that cannot use its GPU.
        print(f"a GPU is present but TensorFlow cannot use it: "
              f"{devices_lib.why_gpus_are_missing()}. Nothing was proved.")
        return 1
    args.num_gpus = num_gpus
    return prove(args, num_gpus) if num_gpus else trace_only(args)


if __name__ == "__main__":
    sys.exit(main())
