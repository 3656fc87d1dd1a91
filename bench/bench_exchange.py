"""The gradient exchange: multi-worker vs one process, hierarchical vs flat,
and --gradient_repacking, images/sec side by side (README: Gradient exchange).

    python bench/bench_exchange.py [--parts=a,b,c] [--rounds=3] [--num_batches=10]

(a) 2 worker processes x 1 device vs 1 process x 2 devices (resnet20;
    bench/bench_multiworker.py's runs).
(b) 2 workers x 2 logical devices: --all_reduce_spec=pscpu/xring
    (hierarchical) vs collective (flat), with the bytes that cross workers
    per step, read off each worker's traced step: the summed input sizes of
    its gradient packs' CollectiveReduceV2 ops (collectives over all devices
    of the cluster count as crossing too: each member sends its pack).
(c) --gradient_repacking 0 / 4 / 16 on resnet20 and alexnet_cifar (a large
    last layer), 1 process x 2 devices (replicated, pscpu) and 2 workers x 1
    device (collective_all_reduce).
Within a part, rounds interleave the configurations; medians are printed.
"""
import argparse
import json
import os
import statistics
import sys

import bench_multiworker as mw

BATCH = 32


def _args(model, num_batches):
    return argparse.Namespace(model=model, batch_size=BATCH, num_batches=num_batches,
                              timeout=600)


def _hosts():
    return ",".join(f"127.0.0.1:{p}" for p in mw._free_ports(2))


def one_process(model, num_batches, *extra):
    args = _args(model, num_batches)
    return mw._run([mw._common(args) + ["--num_gpus=2", "--variable_update=replicated",
                                        *extra]], args.timeout)


def two_workers(model, num_batches, devices, *extra):
    args, hosts = _args(model, num_batches), _hosts()
    return mw._run([mw._common(args) + [f"--num_gpus={devices}",
                                        "--variable_update=collective_all_reduce",
                                        f"--worker_hosts={hosts}", f"--task_index={k}",
                                        "--collective_timeout_secs=300", *extra]
                    for k in range(2)], args.timeout)


def probe(hosts, task, model, devices, spec, packs):
    """Worker mode: join, build the trainer, print its gradient collectives."""
    from towertrain.config.params import Params
    from towertrain.engine.distributed import cluster
    params = Params(model=model, device="cpu", num_gpus=devices, batch_size=BATCH,
                    variable_update="collective_all_reduce", worker_hosts=hosts,
                    task_index=task, all_reduce_spec=spec, gradient_repacking=packs,
                    collective_timeout_secs=300)
    cluster.setup(cluster.from_params(params), params)
    import tensorflow as tf
    from towertrain import Trainer
    trainer = Trainer(params)
    ops = [op for op in trainer.trace_step().graph.get_operations()
           if op.type == "CollectiveReduceV2" and "/pack" in op.name]
    print(json.dumps({"collectives": len(ops),
                      "group_sizes": sorted({int(tf.get_static_value(op.inputs[1]))
                                             for op in ops}),
                      "bytes": sum(op.inputs[0].shape.num_elements() * op.inputs[0].dtype.size
                                   for op in ops)}), flush=True)
    os._exit(0)


def crossing_bytes(model, devices, spec):
    import subprocess
    hosts = _hosts()
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--probe", hosts,
                               str(k), model, str(devices), spec, "0"], cwd=mw.REPO,
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for k in range(2)]
    try:
        outs = [p.communicate(timeout=600)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    line = [l for l in outs[0].splitlines() if l.startswith("{")]
    if not line:
        raise RuntimeError(outs[0][-2000:])
    return json.loads(line[-1])


def interleaved(title, configs, rounds):
    """configs: {name: zero-argument run}; prints and returns {name: median}."""
    results = {name: [] for name in configs}
    for r in range(rounds):
        for name, run in configs.items():
            results[name].append(run())
            print(f"  round {r + 1}: {name}: {results[name][-1]:.1f} images/sec", flush=True)
    print(f"\n{title} ({rounds} rounds, median images/sec)")
    medians = {name: statistics.median(v) for name, v in results.items()}
    for name, values in results.items():
        print(f"  {name:44s} {medians[name]:8.1f}   ({', '.join(f'{v:.1f}' for v in values)})")
    print(flush=True)
    return medians


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="a,b,c")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--num_batches", type=int, default=10)
    parser.add_argument("--probe", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        hosts, task, model, devices, spec, packs = args.probe
        return probe(hosts, int(task), model, int(devices), spec, int(packs))
    n, parts = args.num_batches, args.parts.split(",")
    print(f"batch {BATCH}/device, {n} timed steps after 5 warm-up, CPU: {_cpu()}\n")
    if "a" in parts:
        m = interleaved("(a) resnet20, global batch 64", {
            "2 workers x 1 device": lambda: two_workers("resnet20", n, 1),
            "1 process x 2 devices": lambda: one_process("resnet20", n)}, args.rounds)
        a, b = m.values()
        print(f"  ratio 2 workers / 1 process: {a / b:.2f}\n")
    if "b" in parts:
        m = interleaved("(b) resnet20, 2 workers x 2 devices, global batch 128", {
            spec: lambda spec=spec: two_workers("resnet20", n, 2, f"--all_reduce_spec={spec}")
            for spec in ("pscpu/xring", "collective")}, args.rounds)
        for spec in m:
            sent = crossing_bytes("resnet20", 2, spec)
            print(f"  {spec:12s} {sent['collectives']} gradient collectives per worker "
                  f"(group size {sent['group_sizes']}), {sent['bytes'] / 1e6:.2f} MB per "
                  f"worker per step cross workers")
        print(f"  ratio hierarchical / flat: {m['pscpu/xring'] / m['collective']:.2f}\n")
    if "c" in parts:
        for model in ("resnet20", "alexnet_cifar"):
            configs = {}
            for packs in (0, 4, 16):
                flag = f"--gradient_repacking={packs}"
                configs[f"1 process x 2, repacking {packs}"] = (
                    lambda flag=flag, model=model: one_process(model, n, flag))
                configs[f"2 workers x 1, repacking {packs}"] = (
                    lambda flag=flag, model=model: two_workers(model, n, 1, flag))
            interleaved(f"(c) {model}, --gradient_repacking", configs, args.rounds)


def _cpu():
    with open("/proc/cpuinfo") as f:
        names = [l.split(":", 1)[1].strip() for l in f if l.startswith("model name")]
    return f"{names[0]} x {len(names)}" if names else "unknown"


if __name__ == "__main__":
    main()
