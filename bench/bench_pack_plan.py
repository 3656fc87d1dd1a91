"""--gradient_pack_mb=auto against an exhaustive sweep of the same candidates.

    nice -n 10 python bench/bench_pack_plan.py [--model=cifar_cnn] [--rounds=3]
        [--steps=30] [--warmup=10] [--workers=1] [--devices=2] [--batch_size=32]

Each run is a fresh process on loopback: --workers=1 is one process with
--devices logical CPU devices (--variable_update=replicated, pscpu);
--workers=2 two worker processes on 127.0.0.1 (collective_all_reduce,
pscpu/xring), the chief's times reported. Per round, interleaved:
  sweep  each candidate size of towertrain.engine.run.pack_tuning.candidates
         for the model, fixed (--gradient_pack_mb=M; 0: one pack per dtype),
         --warmup untimed then --steps timed steps;
  auto   --gradient_pack_mb=auto, the same steps (the warm-up times the
         candidates largest first until one gains nothing, the timed steps
         run on its pick).
Printed: per candidate the median over the rounds of each run's median timed
step; per round the auto run's pick, the sweep's time of that pick over the
sweep's best (PASS: within 5%), and the tuning's cost: the auto run's
warm-up time minus the warm-up time of the same round's fixed run of its
pick (the same steps, the same plan at the end), as a share of a 1,000-step
run at the pick's step time (PASS: at most 2%).

--link_mbit=R runs every worker in a network namespace of its own joined by
a veth pair rate-limited to R Mbit/s (bench_slow_link.py's emulated link;
needs root, --workers=2).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
MARK = "PACK_PLAN_RESULT "


def child(config):
    """One run (in this process): prints MARK + {"seconds": [...], "pick": MB or None}."""
    from towertrain import Params, trainer as trainer_lib
    from towertrain.callbacks.base import Callback

    class Times(Callback):
        def __init__(self):
            self.seconds = []

        def after_step(self, step, result, seconds):
            self.seconds.append(seconds)

    cluster = {"variable_update": "replicated"}
    if config["workers"] > 1:
        cluster = dict(variable_update="collective_all_reduce", worker_hosts=config["hosts"],
                       task_index=config["task"], collective_timeout_secs=120)
    params = Params(model=config["model"], device="cpu", num_gpus=config["devices"],
                    batch_size=config["batch_size"],
                    num_warmup_batches=config["warmup"], num_batches=config["steps"],
                    gradient_pack_mb=config["pack_mb"], display_every=1000, **cluster)
    if config["workers"] > 1:
        trainer_lib.join_cluster(params)
    trainer = trainer_lib.Trainer(params)
    times = Times()
    trainer.train(write=lambda line: None, callbacks=[times])
    pick = trainer.pack_tuning.pick if trainer.pack_tuning is not None else None
    print(MARK + json.dumps({"seconds": times.seconds, "pick": pick}), flush=True)
    os._exit(0)


def run(args, pack_mb, link=None):
    """One run of `pack_mb` (a float, or "auto"); the chief's result."""
    hosts = ""
    if args.workers > 1:
        ports = link.ports() if link else _free_ports(args.workers)
        hosts = ",".join(ports)
    procs = []
    for task in range(args.workers):
        config = dict(model=args.model, devices=args.devices, batch_size=args.batch_size,
                      warmup=args.warmup, steps=args.steps, pack_mb=pack_mb,
                      workers=args.workers, hosts=hosts, task=task)
        command = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(config)]
        if link:
            command = link.wrap(task, command)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
        procs.append(subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outputs = [proc.communicate(timeout=1800)[0] for proc in procs]
    for proc, out in zip(procs, outputs):
        if proc.returncode != 0:
            raise SystemExit(f"run --gradient_pack_mb={pack_mb} failed:\n{out[-3000:]}")
    line = [row for row in outputs[0].splitlines() if row.startswith(MARK)][-1]
    return json.loads(line[len(MARK):])


class SlowLink:
    """bench_slow_link.py's two network namespaces joined by a veth pair
    limited to `mbit` (tc tbf), under names of their own (a bench_slow_link
    run at the same time keeps its own); removed by close()."""

    def __init__(self, mbit):
        import bench_slow_link  # bench/ is this script's folder, so on its path
        bench_slow_link.NAMESPACES = ("ttpp0", "ttpp1")
        bench_slow_link.LINKS = ("ttpp-a", "ttpp-b")
        bench_slow_link.ADDRESSES = ("10.78.0.1", "10.78.0.2")
        self.namespaces = bench_slow_link
        bench_slow_link.make_link()
        bench_slow_link.set_rate(mbit)

    def ports(self):
        return [f"{address}:{self.namespaces.PORT}" for address in self.namespaces.ADDRESSES]

    def wrap(self, task, command):
        return ["ip", "netns", "exec", self.namespaces.NAMESPACES[task], *command]

    def close(self):
        self.namespaces.remove_link()


def _free_ports(count):
    import socket
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [f"127.0.0.1:{s.getsockname()[1]}" for s in sockets]
    for s in sockets:
        s.close()
    return ports


def candidates(model):
    from towertrain import models
    from towertrain.engine.run import pack_tuning
    built = models.build(model, num_classes=10, data_format="NHWC")
    return pack_tuning.candidates(built.trainable_variables), sum(
        int(v.numpy().nbytes) for v in built.trainable_variables)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--model", default="cifar_cnn")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--link_mbit", type=float, default=None)
    args = parser.parse_args()
    if args.child:
        return child(json.loads(args.child))
    sizes, total = candidates(args.model)
    link = None
    if args.link_mbit:
        if args.workers != 2:
            raise SystemExit("--link_mbit: the emulated link joins 2 workers; add --workers=2")
        link = SlowLink(args.link_mbit)
    where = (f"{args.workers} workers x {args.devices} CPU devices" if args.workers > 1
             else f"1 process x {args.devices} CPU devices")
    print(f"{args.model}: {total / 1e6:.2f} MB of float32 gradients; candidates "
          f"{', '.join(_size(mb) for mb in sizes)}; {where}, batch {args.batch_size} per "
          f"device, {args.warmup} warm-up + {args.steps} timed steps, {args.rounds} rounds"
          + (f", link {args.link_mbit:g} Mbit/s" if link else ", loopback"), flush=True)
    sweep = {mb: [] for mb in sizes}  # each run's median timed step
    warmups = {mb: [] for mb in sizes}  # each run's warm-up seconds
    rounds = []
    try:
        for round_index in range(args.rounds):
            fixed = {}
            for mb in sizes:
                result = run(args, mb, link)
                fixed[mb] = result
                sweep[mb].append(statistics.median(result["seconds"][args.warmup:]))
                warmups[mb].append(sum(result["seconds"][:args.warmup]))
            auto = run(args, "auto", link)
            pick = auto["pick"]
            best = min(sweep[mb][-1] for mb in sizes)
            cost = sum(auto["seconds"][:args.warmup]) - sum(fixed[pick]["seconds"][:args.warmup])
            share = cost / (1000 * sweep[pick][-1])
            rounds.append((pick, sweep[pick][-1] / best - 1, share,
                           statistics.median(auto["seconds"][args.warmup:])))
            print(f"round {round_index + 1}: " + ", ".join(
                f"{_size(mb)} {sweep[mb][-1] * 1000:.1f} ms" for mb in sizes)
                + f"; auto picked {_size(pick)} (+{rounds[-1][1]:.1%} over the best), "
                f"its timed steps {rounds[-1][3] * 1000:.1f} ms; tuning cost {cost:.2f} s = "
                f"{share:.2%} of 1,000 steps", flush=True)
    finally:
        if link:
            link.close()
    print("\nmedian over the rounds of each run's median timed step:")
    for mb in sizes:
        print(f"  {_size(mb):>20}  {statistics.median(sweep[mb]) * 1000:8.1f} ms   "
              f"(warm-up {statistics.median(warmups[mb]):.2f} s)")
    medians = {mb: statistics.median(sweep[mb]) for mb in sizes}
    best = min(medians.values())
    over_median = [medians[pick] / best - 1 for pick, _, _, _ in rounds]
    shares = [share for _, _, share, _ in rounds]
    print(f"auto's picks: {', '.join(_size(p) for p, _, _, _ in rounds)}")
    print(f"  against its own round's sweep: worst {max(o for _, o, _, _ in rounds):+.1%} "
          f"over the best ({_verdict(max(o for _, o, _, _ in rounds) <= 0.05)}: within 5%)")
    print(f"  against the sweep's medians over the rounds: "
          f"{', '.join(f'{o:+.1%}' for o in over_median)} over the best "
          f"({_verdict(max(over_median) <= 0.05)}: within 5%)")
    print(f"tuning cost: median {statistics.median(shares):.2%}, at most {max(shares):.2%} "
          f"of a 1,000-step run ({_verdict(statistics.median(shares) <= 0.02)}: median at "
          "most 2%)")


def _verdict(ok):
    return "PASS" if ok else "FAIL"


def _size(mb):
    return "one pack per dtype" if not mb else f"{mb:g} MB"


if __name__ == "__main__":
    main()
