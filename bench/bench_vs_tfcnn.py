"""towertrain against tf_cnn_benchmarks, side by side, and towertrain's
worker-count curve.

    python bench/bench_vs_tfcnn.py --tfcnn_dir=PATH [--towers=2,4,8]
        [--rounds=5] [--model=resnet20] [--batch_size=16] [--num_batches=40]
        [--precisions=float32,best] [--workers=1x8,2x4,4x2,8x1]

PATH is a checkout of github.com/tensorflow/benchmarks (its
scripts/tf_cnn_benchmarks is found inside it; the project never copies that
code). tf_cnn_benchmarks runs in a venv with tf_keras==2.21.0 beside this
TensorFlow (--tfcnn_venv, made on first use with --system-site-packages and
TF_USE_LEGACY_KERAS=1: tf.compat.v1.layers needs Keras 2).

Both run whole command lines on synthetic data, --device=cpu with N logical
CPU devices, --variable_update=replicated, each at its defaults otherwise
(towertrain: pscpu; tf_cnn_benchmarks: its copy-to-device sum), NHWC (the CPU
layout), the same per-device batch, warm-up and timed steps; each prints
'total images/sec'. The runs of one round are interleaved (tower count,
precision, then the two programs in alternating order), so drift on the
machine hits both (a run two rows share, tf_cnn_benchmarks' float32, runs
once per round); the table gives per tower count and precision the median
images/sec of each and the median, min and max of the per-round ratios.

Precisions: float32 for both; 'best' is each program's fastest on this
machine: towertrain --use_bf16 where the CPU has bfloat16 instructions
(avx512_bf16 or amx_bf16; else float32), tf_cnn_benchmarks float32 (its only
other precision, --use_fp16, runs float16 convolutions on a CPU at a
fraction of float32's speed; --probe_tfcnn_fp16 measures it once).

The worker curve: towertrain alone, W processes x D logical devices on
127.0.0.1 (--variable_update=collective_all_reduce, default exchange) for
each WxD of --workers, against 1 process x 8 devices, interleaved in the same
rounds. Every process is killed when a run passes --timeout.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

from bench_multiworker import _free_ports, _run as run

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TFCNN_SCRIPT = os.path.join("scripts", "tf_cnn_benchmarks", "tf_cnn_benchmarks.py")


def cpu_has_bf16():
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return bool(re.search(r"\b(avx512_bf16|amx_bf16)\b", flags))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return "unknown CPU"
    name = re.search(r"model name\s*:\s*(.*)", text)
    family = re.search(r"cpu family\s*:\s*(\d+)", text)
    model = re.search(r"\nmodel\s*:\s*(\d+)", text)
    return (f"{name.group(1) if name else '?'} (family {family.group(1) if family else '?'}, "
            f"model {model.group(1) if model else '?'}), {os.cpu_count()} cores")


def tfcnn_python(args):
    """The venv's python, made (tf_keras==2.21.0) if it is not there yet."""
    python = os.path.join(args.tfcnn_venv, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages",
                        args.tfcnn_venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "tf_keras==2.21.0"], check=True)
    return python


def common(args):
    return [f"--model={args.model}", "--device=cpu", f"--batch_size={args.batch_size}",
            f"--num_batches={args.num_batches}", f"--num_warmup_batches={args.num_warmup}",
            f"--display_every={args.num_batches}", "--data_format=NHWC"]


def towertrain_command(args):
    """towertrain's command line, up to the run's own flags: with
    --same_network the CIFAR ResNet with tf_cnn_benchmarks' parameter-free
    shortcuts (bench/towertrain_pad_resnet.py registers it as MODEL_pad)."""
    if not args.same_network:
        return [sys.executable, "-m", "towertrain", *common(args)]
    script = os.path.join(REPO, "bench", "towertrain_pad_resnet.py")
    return [sys.executable, script, *common(args), f"--model={args.model}_pad"]


def towertrain(args, towers, precision):
    flags = ["--use_bf16"] if precision == "bfloat16" else []
    return run([[*towertrain_command(args), f"--num_gpus={towers}",
                 "--variable_update=replicated", *flags, *args.towertrain_flags]],
               args.timeout)


def tfcnn_command(args, towers, *flags):
    """(command, env, cwd) of a tf_cnn_benchmarks run of `towers` replicated
    CPU towers with `flags` (bench/kernel_counts.py runs it too)."""
    data = [] if args.model not in CIFAR_MODELS else ["--data_name=cifar10"]
    script = os.path.join(args.tfcnn_dir, TFCNN_SCRIPT)
    command = [tfcnn_python(args), script, *common(args), *data, f"--num_gpus={towers}",
               "--variable_update=replicated", *flags, *args.tfcnn_flags]
    return command, dict(os.environ, TF_USE_LEGACY_KERAS="1"), os.path.dirname(script)


def tfcnn(args, towers, precision):
    command, env, cwd = tfcnn_command(args, towers,
                                      *(["--use_fp16"] if precision == "float16" else []))
    return run([command], args.timeout, env=env, cwd=cwd)


# The models --same_network has a parameter-free-shortcut variant of.
PAD_MODELS = {f"resnet{d}{v}" for d in (20, 32, 44, 56, 110) for v in ("", "_v2")}

# tf_cnn_benchmarks' models that need --data_name=cifar10 (it defaults to imagenet).
CIFAR_MODELS = {"resnet20", "resnet32", "resnet44", "resnet56", "resnet110", "alexnet_cifar"}


def workers(args, num_workers, devices):
    """W processes x D devices; the chief's total images/sec is the cluster's."""
    base = [*towertrain_command(args), f"--num_gpus={devices}", *args.towertrain_flags]
    if num_workers == 1:
        return run([base + ["--variable_update=replicated"]], args.timeout)
    hosts = ",".join(f"127.0.0.1:{p}" for p in _free_ports(num_workers))
    return run([base + ["--variable_update=collective_all_reduce", f"--worker_hosts={hosts}",
                        f"--task_index={k}", "--collective_timeout_secs=300"]
                for k in range(num_workers)], args.timeout)


def summary(values):
    return f"{statistics.median(values):8.1f} ({min(values):.1f}-{max(values):.1f})"


def ratio_summary(ratios):
    return (f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, "
            f"max {max(ratios):.3f})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tfcnn_dir", required=True,
                        help="a checkout of github.com/tensorflow/benchmarks")
    parser.add_argument("--tfcnn_venv", default=os.path.expanduser("~/.cache/towertrain-tfcnn"),
                        help="venv for tf_cnn_benchmarks (made with tf_keras if missing)")
    parser.add_argument("--model", default="resnet20")
    parser.add_argument("--towers", default="2,4,8")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--num_batches", type=int, default=40)
    parser.add_argument("--num_warmup", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--precisions", default="float32,best")
    parser.add_argument("--workers", default="1x8,2x4,4x2,8x1",
                        help="the worker curve's WxD shapes ('' skips it)")
    parser.add_argument("--probe_tfcnn_fp16", action="store_true",
                        help="also time tf_cnn_benchmarks --use_fp16 once per tower count")
    parser.add_argument("--same_network", action="store_true",
                        help="towertrain trains the CIFAR ResNet with tf_cnn_benchmarks' "
                        "parameter-free shortcuts (MODEL_pad) instead of its registered one "
                        "(1x1 projections: 2 more convolutions)")
    parser.add_argument("--towertrain_flags", nargs="*", default=[])
    parser.add_argument("--tfcnn_flags", nargs="*", default=[])
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.tfcnn_dir, TFCNN_SCRIPT)):
        parser.error(f"--tfcnn_dir={args.tfcnn_dir}: no {TFCNN_SCRIPT} there; give a checkout "
                     "of github.com/tensorflow/benchmarks")
    if args.same_network and args.model not in PAD_MODELS:
        parser.error(f"--same_network: only for the CIFAR ResNets ({', '.join(sorted(PAD_MODELS))})")
    towers = [int(t) for t in args.towers.split(",")]
    best_tt = "bfloat16" if cpu_has_bf16() else "float32"
    precisions = []
    for p in args.precisions.split(","):
        pair = ("float32", "float32") if p == "float32" else (best_tt, "float32")
        if pair not in precisions:
            precisions.append(pair)
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.workers.split(",") if s]
    print(f"CPU: {cpu_model()}; bfloat16 instructions: {cpu_has_bf16()}", flush=True)
    tfcnn_python(args)
    if args.probe_tfcnn_fp16:
        for t in towers:
            print(f"probe: tf_cnn_benchmarks {t} towers --use_fp16: "
                  f"{tfcnn(args, t, 'float16'):.1f} images/sec", flush=True)

    pairs = {(t, p): ([], [], []) for t in towers for p in precisions}  # tt, tfcnn, ratio
    curve = {s: [] for s in shapes}
    started = time.monotonic()
    for r in range(args.rounds):
        for t in towers:
            # Each distinct run once per round (a precision both rows share,
            # tf_cnn_benchmarks' float32, is one run), in alternating order.
            runs = list(dict.fromkeys(
                [("towertrain", p_tt) for p_tt, _ in precisions] +
                [("tf_cnn_benchmarks", p_tf) for _, p_tf in precisions]))
            if r % 2:
                runs.reverse()
            got = {run_: (towertrain if run_[0] == "towertrain" else tfcnn)(args, t, run_[1])
                   for run_ in runs}
            for p_tt, p_tf in precisions:
                tt_values, tf_values, ratios = pairs[(t, (p_tt, p_tf))]
                a, b = got[("towertrain", p_tt)], got[("tf_cnn_benchmarks", p_tf)]
                tt_values.append(a)
                tf_values.append(b)
                ratios.append(a / b)
                print(f"round {r + 1}: {t} towers, towertrain {p_tt} {a:.1f}, "
                      f"tf_cnn_benchmarks {p_tf} {b:.1f}, ratio {ratios[-1]:.3f}", flush=True)
        for shape in (shapes if r % 2 == 0 else list(reversed(shapes))):
            curve[shape].append(workers(args, *shape))
            print(f"round {r + 1}: {shape[0]} x {shape[1]}: {curve[shape][-1]:.1f}", flush=True)

    network = (" (towertrain: the same network, parameter-free shortcuts)"
               if args.same_network else "")
    print(f"\n{args.model}{network}, synthetic, {args.batch_size} per device, --num_batches="
          f"{args.num_batches} --num_warmup_batches={args.num_warmup}, {args.rounds} "
          f"interleaved rounds, {(time.monotonic() - started) / 60:.1f} min; CPU: {cpu_model()}")
    print("| towers | towertrain precision | towertrain img/s | tf_cnn_benchmarks img/s "
          "| towertrain / tf_cnn_benchmarks, median (min, max) of rounds |")
    print("|---|---|---|---|---|")
    for (t, (p_tt, p_tf)), (tt_values, tf_values, ratios) in pairs.items():
        print(f"| {t} | {p_tt} (tf_cnn_benchmarks {p_tf}) | {summary(tt_values)} | "
              f"{summary(tf_values)} | {ratio_summary(ratios)} |")
    if curve:
        base_shape = (1, 8) if (1, 8) in curve else next(iter(curve))
        base = curve[base_shape]
        print(f"\n| workers x devices | img/s | / {base_shape[0]} x {base_shape[1]}, "
              "median (min, max) of rounds |")
        print("|---|---|---|")
        for shape, values in curve.items():
            ratios = [v / b for v, b in zip(values, base)]
            print(f"| {shape[0]} x {shape[1]} | {summary(values)} | {ratio_summary(ratios)} |")


if __name__ == "__main__":
    main()
