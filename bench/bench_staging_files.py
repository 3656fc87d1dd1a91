"""What staging costs or buys with file input on CPU devices.

    python bench/bench_staging_files.py [--towers=2,8] [--rounds=5]
        [--model=resnet20] [--batch_size=16] [--num_batches=40]

Writes a CIFAR-10 binary data set (random pixels, --examples records in 5
files) to a temporary directory, then times whole command lines,
`python -m towertrain --data_dir=DIR --data_name=cifar10 --device=cpu
--num_gpus=N --variable_update=replicated`, in interleaved rounds:
  synthetic        no --data_dir: no input pipeline, nothing staged (the reference);
  files, depth 0   --staging_depth=0: each step takes its batch from tf.data directly;
  files, depth 1   --staging_depth=1 (the default): one batch per device staged
                   ahead, in the step before it is used.
On CPU devices a staged batch is not copied between memories, so staging can
only hide the input pipeline's latency; its cost is the extra ops (a put and a
get per device per step) and the staged batch's memory. Printed: median
images/sec (min-max) and the per-round ratios depth 1 / depth 0 and
depth 1 / synthetic.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from towertrain.input_pipeline.cifar10 import RECORD_BYTES

FILES = 5


def write_cifar_binary(data_dir, examples, seed=0):
    """data_batch_1..5.bin and test_batch.bin of random records."""
    rng = np.random.default_rng(seed)
    for i, part in enumerate(np.array_split(np.arange(examples), FILES)):
        records = rng.integers(0, 256, (len(part), RECORD_BYTES), dtype=np.uint8)
        records[:, 0] %= 10  # the label byte
        records.tofile(os.path.join(data_dir, f"data_batch_{i + 1}.bin"))
    test = rng.integers(0, 256, (max(1, examples // 5), RECORD_BYTES), dtype=np.uint8)
    test[:, 0] %= 10
    test.tofile(os.path.join(data_dir, "test_batch.bin"))


def variants(data_dir):
    """(label, extra flags) of the runs in each round."""
    files = [f"--data_dir={data_dir}", "--data_name=cifar10"]
    return [("synthetic", []),
            ("files, depth 0", files + ["--staging_depth=0"]),
            ("files, depth 1", files + ["--staging_depth=1"])]


def command(args, towers, flags):
    return [sys.executable, "-m", "towertrain", f"--model={args.model}", "--device=cpu",
            f"--num_gpus={towers}", "--variable_update=replicated",
            f"--batch_size={args.batch_size}", f"--num_batches={args.num_batches}",
            f"--num_warmup_batches={args.num_warmup}", f"--display_every={args.num_batches}",
            *flags]


def ratios(numerators, denominators):
    return [a / b for a, b in zip(numerators, denominators)]


def summary(values):
    return (f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--towers", default="2,8")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--model", default="resnet20")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--num_batches", type=int, default=40)
    parser.add_argument("--num_warmup", type=int, default=10)
    parser.add_argument("--examples", type=int, default=10000,
                        help="records written (more than the run reads: no epoch ends)")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args(argv)
    args.towers = [int(t) for t in args.towers.split(",") if t]
    if args.rounds < 1 or not args.towers or min(args.towers) < 1:
        parser.error("--rounds and every --towers entry must be >= 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    from bench_multiworker import _run as run  # bench/ is the script's own directory
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tt_staging_files_") as data_dir:
        write_cifar_binary(data_dir, args.examples)
        runs = variants(data_dir)
        got = {(t, label): [] for t in args.towers for label, _ in runs}
        for r in range(args.rounds):
            for t in args.towers:
                for label, flags in (runs if r % 2 == 0 else list(reversed(runs))):
                    got[(t, label)].append(run([command(args, t, flags)], args.timeout))
                    print(f"round {r + 1}: {t} towers, {label}: {got[(t, label)][-1]:.1f}",
                          flush=True)
    print(f"\n{args.model}, {args.batch_size} per device, --num_batches={args.num_batches} "
          f"--num_warmup_batches={args.num_warmup}, {args.rounds} interleaved rounds, "
          f"{(time.monotonic() - started) / 60:.1f} min; images/sec, median (min-max)")
    print("| towers | synthetic | files, depth 0 | files, depth 1 | depth 1 / depth 0 "
          "| depth 1 / synthetic |")
    print("|---|---|---|---|---|---|")
    for t in args.towers:
        synthetic, depth0, depth1 = (got[(t, label)] for label, _ in runs)
        print(f"| {t} | {summary(synthetic)} | {summary(depth0)} | {summary(depth1)} | "
              f"{summary(ratios(depth1, depth0))} | {summary(ratios(depth1, synthetic))} |")


if __name__ == "__main__":
    main()
