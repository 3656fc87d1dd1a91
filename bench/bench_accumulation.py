"""Gradient accumulation at the same examples per update, side by side.

    python bench/bench_accumulation.py --rounds=5 --steps=5

For each model, on 2 logical CPU devices (replicated/pscpu, synthetic data):
K = 1 with batch B x K per device against --gradient_accumulation_steps=K
with batch B per device, so both apply updates of the same 2 x B x K
examples. Each is built once, then timed in interleaved rounds
(towertrain.commands.scaling.time_rounds: the order rotates every round).
A step is one update; images/sec counts every micro-batch's examples.
Prints medians and the median per-round ratio of K to K = 1.
"""
import argparse
import os
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import towertrain  # noqa: E402,F401 - sets TF_ENABLE_ONEDNN_OPTS before TensorFlow loads
from towertrain.engine.process import devices  # noqa: E402
from towertrain.config import params as params_lib  # noqa: E402
from towertrain.commands import scaling  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="resnet20")
    parser.add_argument("--num_devices", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=16,
                        help="per device per micro-batch with accumulation")
    parser.add_argument("--steps_to_accumulate", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5, help="updates per round")
    args = parser.parse_args()
    devices.ensure_logical_cpus(args.num_devices)
    k = args.steps_to_accumulate
    configs = []
    for model in args.models.split(","):
        for name, batch, steps in ((f"K=1 x {args.batch_size * k}", args.batch_size * k, 1),
                                   (f"K={k} x {args.batch_size}", args.batch_size, k)):
            params = params_lib.Params(
                model=model, device="cpu", num_gpus=args.num_devices, batch_size=batch,
                variable_update="replicated", all_reduce_spec="pscpu", num_warmup_batches=0,
                gradient_accumulation_steps=steps)
            config = scaling.Configuration(f"{model} {name}", "replicated", "pscpu",
                                           args.num_devices, batch * args.num_devices)
            config.runner = scaling.TowertrainRunner(params, warmup_steps=1)
            configs.append(config)
    scaling.time_rounds(configs, args.rounds, args.steps, warmup_steps=1,
                        write=lambda line: print(line, file=sys.stderr))
    print(f"{'model / setting (per device)':<30}{'images/sec':>12}"
          f"{'x K=1 (per-round median)':>28}")
    for i, config in enumerate(configs):
        base = configs[i - i % 2]
        ratios = [a / b for a, b in zip(config.images_per_sec, base.images_per_sec)]
        print(f"{config.mode:<30}{config.median:>12.1f}{statistics.median(ratios):>27.2f}x")
    for config in configs:
        config.runner.close()


if __name__ == "__main__":
    main()
