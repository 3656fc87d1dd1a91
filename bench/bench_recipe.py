"""Speed of the training-recipe switches, side by side in one process.

    python bench/bench_recipe.py --rounds=5 --steps=10

For resnet20 and cifar_cnn on 2 logical CPU devices (replicated, 2 x 32,
synthetic data): float32, --use_bf16, --xla_compile,
--compact_gradient_transfer and --sync_batch_norm (batch-norm models), each
built once, then timed in interleaved rounds
(towertrain.commands.scaling.time_rounds: the order rotates every round, so this
machine's +-20% drift hits every contender alike). Prints medians and each
switch's median per-round ratio to float32 of the same model.
"""
import argparse
import os
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import towertrain  # noqa: E402,F401 - sets TF_ENABLE_ONEDNN_OPTS before TensorFlow loads
from towertrain.engine.process import devices  # noqa: E402
from towertrain.config import params as params_lib
from towertrain.commands import scaling

SWITCHES = {
    "float32": {},
    "bf16": {"use_bf16": True},
    "xla": {"xla_compile": True},
    "compact": {"compact_gradient_transfer": True},
    "bf16+compact": {"use_bf16": True, "compact_gradient_transfer": True},
    "sync_bn": {"sync_batch_norm": True},
}
# Models without batch norm refuse --sync_batch_norm.
WITHOUT_BATCH_NORM = {"cifar_cnn", "trivial", "lenet", "alexnet"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="resnet20,cifar_cnn")
    parser.add_argument("--num_devices", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    devices.ensure_logical_cpus(args.num_devices)
    configs = []
    for model in args.models.split(","):
        for name, switches in SWITCHES.items():
            if switches.get("sync_batch_norm") and model in WITHOUT_BATCH_NORM:
                continue
            params = params_lib.Params(
                model=model, device="cpu", num_gpus=args.num_devices,
                batch_size=args.batch_size, variable_update="replicated",
                all_reduce_spec="pscpu", num_warmup_batches=0,
                # A bench measures, emulated or not (the header of a run says which).
                allow_emulated_precision=True, **switches)
            config = scaling.Configuration(f"{model} {name}", "replicated", "pscpu",
                                           args.num_devices,
                                           args.batch_size * args.num_devices)
            config.runner = scaling.TowertrainRunner(params, warmup_steps=1)
            configs.append(config)
    scaling.time_rounds(configs, args.rounds, args.steps, warmup_steps=2,
                        write=lambda line: print(line, file=sys.stderr))
    by_name = {c.mode: c for c in configs}
    print(f"{'model / switch':<26}{'images/sec':>12}{'x float32 (per-round median)':>32}")
    for config in configs:
        model = config.mode.split()[0]
        base = by_name[f"{model} float32"].images_per_sec
        ratios = [a / b for a, b in zip(config.images_per_sec, base)]
        print(f"{config.mode:<26}{config.median:>12.1f}{statistics.median(ratios):>31.2f}x")
    for config in configs:
        config.runner.close()


if __name__ == "__main__":
    main()
