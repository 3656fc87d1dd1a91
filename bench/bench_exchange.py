"""The gradient exchange: multi-worker vs one process, hierarchical vs flat,
and --gradient_repacking, images/sec side by side (docs/exchange.md).

    python bench/bench_exchange.py [--rounds=3] [--steps=5] [--sessions=1,2,3]

Three sessions; each builds its trainers once (synthetic data, batch 32 per
device) and times them in interleaved rounds of --steps steps, so process
start-up and tracing (minutes on a loaded 2-core machine) are paid once:
1. one process x 2 logical devices, replicated (pscpu): resnet20 and
   alexnet_cifar (a large first fully connected layer near the top) with
   --gradient_repacking 0 / 4 / 16;
2. 2 worker processes x 1 device, collective_all_reduce: the same six, in
   one process pair;
3. 2 worker processes x 2 devices, resnet20: --all_reduce_spec=pscpu/xring
   (hierarchical, one member per worker crosses) vs scatter/xring (Horovod's
   shape: each device crosses with its half of each pack) vs collective
   (flat), with the bytes of gradient that enter cross-process collectives
   per worker per step, read off each trainer's traced step (the summed
   input sizes of its packs' CollectiveReduceV2 ops), and the bytes a ring
   then sends from each worker to the others (ring_bytes_sent).
(a) compares resnet20 with one pack in sessions 2 and 1, (b) is session 3,
(c) sessions 1 and 2. Images/sec count the global batch (every worker's).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_multiworker import _free_ports  # noqa: E402 - beside this script

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 32
SPECS = ("pscpu/xring", "scatter/xring", "collective")  # session 3
REPACKING = [(model, packs) for model in ("resnet20", "alexnet_cifar") for packs in (0, 4, 16)]


def _configs(session):
    """(label, model, Params changes) of the trainers of process pair `session` (both models in
    one process pair: each model's collectives have their own key space)."""
    if session in (1, 2):
        mode = "replicated" if session == 1 else "collective_all_reduce"
        spec = "pscpu" if session == 1 else "pscpu/xring"
        return [(f"{name} repacking {packs}", name,
                 dict(variable_update=mode, all_reduce_spec=spec, gradient_repacking=packs))
                for name, packs in REPACKING]
    return [(f"resnet20 {spec}", "resnet20",
             dict(variable_update="collective_all_reduce", all_reduce_spec=spec))
            for spec in SPECS]


def ring_bytes_sent(members, workers):
    """The bytes one worker sends to the other workers per step through ring
    all-reduces, one (group size n, input bytes b) per member on this worker:
    2(n-1)/n x b leave each member; a group with k = n / workers members on
    each worker, its ring visiting a worker's members in a row, crosses on
    one edge of the k, so each member accounts for 1/k of that edge."""
    return sum(2 * (n - 1) / n * b * workers / n for n, b in members)


def run_session(session, hosts, task, rounds, steps):
    """One process of pair `session`: builds its trainers, times them, prints JSON (chief)."""
    from towertrain.config.params import Params
    from towertrain.engine.process import devices as devices_lib
    from towertrain import trainer as trainer_lib
    devices = 1 if session == 2 else 2
    base = dict(device="cpu", num_gpus=devices, batch_size=BATCH, num_warmup_batches=0)
    if hosts:
        base.update(worker_hosts=hosts, task_index=task, collective_timeout_secs=600)
        first = Params(model="resnet20", variable_update="collective_all_reduce", **base)
        trainer_lib.join_cluster(first)
    else:
        devices_lib.ensure_logical_cpus(devices)
    import tensorflow as tf
    from towertrain import Trainer
    trainers, crossing = {}, {}
    for label, name, changes in _configs(session):
        trainer = Trainer(Params(model=name, **base, **changes))
        ops = [op for op in trainer.trace_step().graph.get_operations()
               if op.type == "CollectiveReduceV2" and "/pack" in op.name]
        members = [(int(tf.get_static_value(op.inputs[1])),
                    op.inputs[0].shape.num_elements() * op.inputs[0].dtype.size) for op in ops]
        crossing[label] = {"collectives": len(ops), "bytes": sum(b for _, b in members),
                           "group_sizes": sorted({n for n, _ in members}),
                           "sent": ring_bytes_sent(members, 2 if hosts else 1),
                           "links": len({op.device for op in ops})}
        for _ in range(2):  # warm-up
            float(trainer.step())
        trainers[label] = trainer
    speeds = {label: [] for label in trainers}
    for _ in range(rounds):
        for label, trainer in trainers.items():
            start = time.perf_counter()
            for _ in range(steps):
                loss = trainer.step()
            float(loss)
            speeds[label].append(steps * trainer.global_batch_size /
                                 (time.perf_counter() - start))
    if task == 0:
        print(json.dumps({"speeds": speeds, "crossing": crossing}), flush=True)
    sys.stdout.flush()
    os._exit(0)  # gRPC teardown is not needed


def session(number, rounds, steps, timeout=2400):
    hosts = "" if number == 1 else ",".join(f"127.0.0.1:{p}" for p in _free_ports(2))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker",
                               str(number), hosts or "-", str(k), str(rounds), str(steps)],
                              cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
             for k in range(1 if number == 1 else 2)]
    try:
        outs = [p.communicate(timeout=timeout)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    lines = [line for line in outs[0].splitlines() if line.startswith("{")]
    if any(p.returncode for p in procs) or not lines:
        raise RuntimeError("\n".join(out[-2000:] for out in outs))
    return json.loads(lines[-1])


def _paired(result, a, b):
    """Median of the per-round ratios a / b: the two ran back to back in each
    round, so load that drifts between rounds cancels."""
    return statistics.median(x / y for x, y in zip(result["speeds"][a], result["speeds"][b]))


def _table(title, result):
    print(title)
    medians = {}
    for label, values in result["speeds"].items():
        medians[label] = statistics.median(values)
        print(f"  {label:28s} {medians[label]:8.1f} images/sec   "
              f"({', '.join(f'{v:.1f}' for v in values)})")
    print(flush=True)
    return medians


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--sessions", default="1,2,3")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        number, hosts, task, rounds, steps = args.worker
        return run_session(int(number), None if hosts == "-" else hosts, int(task),
                           int(rounds), int(steps))
    print(f"batch {BATCH}/device, {args.rounds} rounds of {args.steps} steps, "
          f"CPU: {_cpu()}\n", flush=True)
    medians = {}
    for number in (int(n) for n in args.sessions.split(",")):
        result = session(number, args.rounds, args.steps)
        medians[number] = _table({1: "1 process x 2 devices, replicated pscpu",
                                  2: "2 workers x 1 device, collective_all_reduce",
                                  3: "2 workers x 2 devices, resnet20"}[number], result)
        if number == 3:
            for label, sent in result["crossing"].items():
                print(f"  {label:28s} {sent['collectives']} gradient collectives per worker "
                      f"(group size {sent['group_sizes']}, from {sent['links']} device(s)), "
                      f"{sent['bytes'] / 1e6:.2f} MB per worker per step into them, "
                      f"{sent['sent'] / 1e6:.2f} MB sent to the other worker (ring)")
            m = medians[3]
            for spec in SPECS[1:]:
                a, b = "resnet20 " + SPECS[0], "resnet20 " + spec
                print(f"  (b) {SPECS[0]} / {spec}: {m[a] / m[b]:.2f} (medians); "
                      f"{_paired(result, a, b):.2f} (median of per-round ratios)")
            print()
    if 1 in medians and 2 in medians:
        key = "resnet20 repacking 0"
        print(f"(a) 2 workers x 1 device / 1 process x 2 devices (resnet20): "
              f"{medians[2][key] / medians[1][key]:.2f}")


def _cpu():
    with open("/proc/cpuinfo") as f:
        names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    return f"{names[0]} x {len(names)}" if names else "unknown"


if __name__ == "__main__":
    main()
