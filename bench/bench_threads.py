"""CPU towers' intra-op threads: the default against other pool sizes.

    python bench/bench_threads.py [--towers=1,2,4,8] [--threads=default,0]
        [--rounds=5] [--model=resnet20] [--batch_size=16]

Runs `python -m towertrain` (synthetic data, --device=cpu with T logical
devices, replicated; one tower: parameter_server) once per --threads entry per
round, interleaved: `default` leaves --num_intra_threads unset (the cores /
the towers, see --num_intra_threads' help), `0` is TensorFlow's own choice
(every core), a number is that many threads. This machine's speed drifts
+-20% between runs, so it prints each entry's median and the median of its
per-round ratio to the first entry.
"""
import argparse
import sys

from bench_multiworker import _run as run
from bench_vs_tfcnn import ratio_summary, summary


def command(args, towers, threads):
    update = "replicated" if towers > 1 else "parameter_server"
    flags = [] if threads == "default" else [f"--num_intra_threads={threads}"]
    return [sys.executable, "-m", "towertrain", f"--model={args.model}", "--device=cpu",
            f"--num_gpus={towers}", f"--variable_update={update}",
            f"--batch_size={args.batch_size}", f"--num_batches={args.num_batches}",
            f"--num_warmup_batches={args.num_warmup}", f"--display_every={args.num_batches}",
            "--data_format=NHWC", *flags]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--towers", default="1,2,4,8")
    parser.add_argument("--threads", default="default,0",
                        help="comma-separated: default, 0 (TensorFlow's choice) or a count")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--model", default="resnet20")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--num_batches", type=int, default=40)
    parser.add_argument("--num_warmup", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args(argv)
    args.towers = [int(t) for t in args.towers.split(",")]
    args.threads = args.threads.split(",")
    for entry in args.threads:
        if entry != "default" and not entry.isdigit():
            parser.error(f"--threads: {entry!r} is not 'default' or a count")
    return args


def main(argv=None):
    args = parse_args(argv)
    speeds = {(t, n): [] for t in args.towers for n in args.threads}
    for r in range(args.rounds):
        for towers in args.towers:
            for threads in args.threads:
                speed = run([command(args, towers, threads)], args.timeout)
                speeds[towers, threads].append(speed)
                print(f"round {r + 1}: {towers} towers, threads {threads}: {speed:.1f}",
                      flush=True)
    first = args.threads[0]
    print(f"\n{args.model}, synthetic, {args.batch_size} per device, {args.rounds} rounds")
    print(f"| towers | --num_intra_threads | img/s, median (min-max) | / {first}, per round |")
    print("|---|---|---|---|")
    for towers in args.towers:
        for threads in args.threads:
            ratios = [a / b for a, b in zip(speeds[towers, threads], speeds[towers, first])]
            print(f"| {towers} | {threads} | {summary(speeds[towers, threads])} | "
                  f"{ratio_summary(ratios)} |")


if __name__ == "__main__":
    main()
