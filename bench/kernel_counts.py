"""Kernels executed per step per device: towertrain against tf_cnn_benchmarks.

    python bench/kernel_counts.py --tfcnn_dir=PATH [--towers=8] [--model=resnet20]
        [--batch_size=8] [--optimizer=momentum] [--keep_dir=DIR]

Both programs train the same command line (synthetic data, --device=cpu with
N logical CPU devices, --variable_update=replicated, float32, NHWC; the
tf_cnn_benchmarks side is bench/bench_vs_tfcnn.py's, in its venv) and write
one step with their own --trace_file: towertrain the first timed step (its
trace has one process per device), tf_cnn_benchmarks the step two before the
timed ones (a Timeline: a "<device> Compute" process per device). Each op
event of a device is one kernel run; _Send/_Recv (and the host variants) are
left aside: they are how one program's graph partitioning moves tensors, not
work the step asks for. Prints, for each program, the events per device
(all events / devices) and every device's own count, the ratio
towertrain / tf_cnn_benchmarks, and per op type the events per device of
each and the difference, towertrain's excess first; then towertrain's events
per device by name scope (the update's branch is 'cond').
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

from bench_vs_tfcnn import cpu_model, tfcnn_command, towertrain_command

SEND_RECV = {"_Send", "_Recv", "_HostSend", "_HostRecv"}


def device_of(process_name):
    """The device of a trace process that holds kernels, else None:
    towertrain's '/device:CPU:3', tf_cnn_benchmarks' '/job:.../device:CPU:3 Compute'."""
    if process_name.startswith("/device:"):
        return process_name[len("/device:"):]
    if process_name.endswith(" Compute") and "/device:" in process_name:
        return process_name[process_name.index("/device:") + len("/device:"):-len(" Compute")]
    return None


def kernel_counts(trace):
    """{device: Counter(op type -> events)} of a Chrome trace dict, Send/Recv aside."""
    devices = {}
    for event in trace["traceEvents"]:
        if event.get("ph") == "M" and event.get("name") == "process_name":
            device = device_of(event["args"]["name"])
            if device is not None:
                devices[event["pid"]] = device
    counts = {device: collections.Counter() for device in devices.values()}
    for event in trace["traceEvents"]:
        if event.get("ph") != "X" or event.get("pid") not in devices:
            continue
        op = event.get("args", {}).get("op", event["name"])
        if op not in SEND_RECV:
            counts[devices[event["pid"]]][op] += 1
    if not counts:
        raise ValueError("no device processes with kernels in the trace")
    return counts


def scope_counts(trace):
    """towertrain's events per device by the first name scope of their node
    (tower indices as '*', so every tower's scope is one row; the update's
    branch is 'cond'), Send/Recv aside."""
    devices = {event["pid"] for event in trace["traceEvents"]
               if event.get("name") == "process_name"
               and device_of(event["args"]["name"]) is not None}
    counts = collections.Counter()
    for event in trace["traceEvents"]:
        args = event.get("args", {})
        if event.get("ph") == "X" and event["pid"] in devices and args.get("op") not in SEND_RECV:
            counts[re.sub(r"_\d+$", "_*", args.get("node", "?").split("/")[0])] += 1
    return {scope: n / len(devices) for scope, n in counts.most_common()}


def per_device(counts):
    """(events per device, {op type: events per device}) of kernel_counts()."""
    total = collections.Counter()
    for counter in counts.values():
        total.update(counter)
    return sum(total.values()) / len(counts), {op: n / len(counts) for op, n in total.items()}


def breakdown(ours, theirs):
    """Rows (op type, towertrain, tf_cnn_benchmarks, difference) per device,
    the largest excess first; op types both run equally often are left out."""
    rows = [(op, ours.get(op, 0.0), theirs.get(op, 0.0)) for op in set(ours) | set(theirs)]
    rows = [(op, a, b, a - b) for op, a, b in rows if a != b]
    return sorted(rows, key=lambda row: (-row[3], row[0]))


def report(tt_counts, tf_counts, write=print):
    tt_total, tt_ops = per_device(tt_counts)
    tf_total, tf_ops = per_device(tf_counts)
    for name, counts, total in (("towertrain", tt_counts, tt_total),
                                ("tf_cnn_benchmarks", tf_counts, tf_total)):
        each = ", ".join(f"{d} {sum(c.values())}" for d, c in sorted(counts.items()))
        write(f"{name}: {total:.1f} events per device per step over {len(counts)} devices "
              f"({each})")
    write(f"towertrain / tf_cnn_benchmarks: {tt_total / tf_total:.3f}")
    write("\n| op type | towertrain / device | tf_cnn_benchmarks / device | difference |")
    write("|---|---|---|---|")
    for op, a, b, diff in breakdown(tt_ops, tf_ops):
        write(f"| {op} | {a:g} | {b:g} | {diff:+g} |")
    return tt_total / tf_total


def traced(command, path, timeout, env=None, cwd=None):
    """Runs `command` (which writes a trace to `path`); the trace's dict."""
    env = dict(os.environ if env is None else env, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0 or not os.path.exists(path):
        raise RuntimeError(f"{' '.join(command[:3])}... exit {done.returncode}, no trace at "
                           f"{path}:\n{(done.stdout + done.stderr)[-3000:]}")
    with open(path) as f:
        return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tfcnn_dir", required=True,
                        help="a checkout of github.com/tensorflow/benchmarks")
    parser.add_argument("--tfcnn_venv", default=os.path.expanduser("~/.cache/towertrain-tfcnn"),
                        help="venv for tf_cnn_benchmarks (made with tf_keras if missing)")
    parser.add_argument("--model", default="resnet20")
    parser.add_argument("--towers", type=int, default=8)
    parser.add_argument("--batch_size", type=int, default=8, help="per device")
    parser.add_argument("--optimizer", default="momentum")
    parser.add_argument("--num_warmup", type=int, default=3,
                        help="tf_cnn_benchmarks traces the step two before the timed ones")
    parser.add_argument("--same_network", action="store_true",
                        help="as bench_vs_tfcnn.py: towertrain trains MODEL_pad")
    parser.add_argument("--towertrain_flags", nargs="*", default=[])
    parser.add_argument("--tfcnn_flags", nargs="*", default=[])
    parser.add_argument("--keep_dir", help="write both traces here (default: a temporary dir)")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    args.num_batches = 1  # bench_vs_tfcnn.common's; one timed step is traced
    directory = args.keep_dir or tempfile.mkdtemp(prefix="kernel_counts_")
    os.makedirs(directory, exist_ok=True)
    tt_path = os.path.join(directory, "towertrain_trace.json")
    tf_path = os.path.join(directory, "tfcnn_trace.json")
    shared = [f"--optimizer={args.optimizer}"]
    print(f"CPU: {cpu_model()}; {args.model}, {args.towers} CPU towers x {args.batch_size}, "
          f"replicated, float32, --optimizer={args.optimizer}; traces in {directory}",
          flush=True)
    tt = traced([*towertrain_command(args), f"--num_gpus={args.towers}",
                 "--variable_update=replicated", *shared, f"--trace_file={tt_path}",
                 *args.towertrain_flags], tt_path, args.timeout)
    command, env, cwd = tfcnn_command(args, args.towers, *shared, f"--trace_file={tf_path}")
    tf = traced(command, tf_path, args.timeout, env=env, cwd=cwd)
    report(kernel_counts(tt), kernel_counts(tf))
    print("\ntowertrain's events per device by first name scope: " + ", ".join(
        f"{scope} {n:g}" for scope, n in scope_counts(tt).items() if n >= 1))


if __name__ == "__main__":
    sys.exit(main())
