"""The gradient exchange on an emulated slow link: how much of it packs hide.

    python bench/bench_slow_link.py [--rounds=5] [--steps=4] [--warmup=1]
        [--rates=resnet20=10,20 --rates=alexnet_cifar=40,80] [--pack_mb=0.25]
        [--all_reduce_spec=pscpu/xring[,scatter/xring]] [--packings=t_1,t_4,t_16,t_bytes]
        [--devices_per_worker=1] [--wire=float32[,float16,bfloat16]]

Needs root (network namespaces). Two worker processes, each `python -m
towertrain --device=cpu --num_gpus=1` (one logical CPU device, one intra-op
thread) in a network namespace of its own, joined by a veth pair (10.77.0.1
and 10.77.0.2) whose both ends are rate-limited with `tc qdisc ... tbf` (this
kernel has tbf, not netem). Per model and round, interleaved:
  t_indep  --variable_update=independent: each worker alone, no exchange;
  and at each link rate, --variable_update=collective_all_reduce with
  t_1      one pack per dtype (the CPU default),
  t_4/t_16 --gradient_repacking=4 / 16,
  t_bytes  --gradient_pack_mb=--pack_mb.
A time is one worker's step (its batch over its images/sec). Printed per
model and rate: medians, min and max over the rounds, the exposed exchange
fraction (t_N - t_indep) / (t_1 - t_indep) of the medians (1: packs hide
nothing; 0: the exchange hides entirely behind the backward pass), and the
bytes that left worker 0's end of the link per step (tx bytes over the run,
start-up's variable broadcast included, over its steps). The namespaces are
deleted at exit, also on failure or Ctrl-C.

--all_reduce_spec picks the collective exchange (pscpu/xring by default;
scatter/xring, Horovod's shape, or collective, flat), or several,
comma-separated, timed interleaved with the per-round ratio of the first to
each other; --packings which packings to time (t_1 always); and
--devices_per_worker the logical CPU devices per worker: with one device per
worker every spec sends the same bytes through the one link, so compare specs
with 2.

--wire: the precision each pack crosses in (float16/bfloat16:
--compact_gradient_transfer with --compact_transfer_dtype), each exchange
timed in each, interleaved and labelled with it ("t_1 float16"); the report
adds the bytes each sends per step over float32's.

--contention: instead, t_indep and t_1 with the link unlimited (tbf at 10
Gbit/s): what the exchange costs in CPU (gRPC, copies, the sum) on cores
that also compute, with no wait for the link.
"""
import argparse
import atexit
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMESPACES = ("ttsl0", "ttsl1")
LINKS = ("ttsl-a", "ttsl-b")  # the veth ends, one in each namespace
ADDRESSES = ("10.77.0.1", "10.77.0.2")
PORT = 7777
UNLIMITED_MBIT = 10000
BATCH = 32
DEFAULT_RATES = ["resnet20=10,20", "alexnet_cifar=40,80"]  # Mbit/s: t_1 - t_indep >= 2 t_indep
TOTAL = re.compile(r"total images/sec: ([0-9.]+)")
PACKS_LINE = re.compile(r"Gradient packs: +(.*)")


# ---- pure parts (tests/bench/test_bench_slow_link.py) ----

def parse_rates(entries):
    """{'resnet20': (20.0, 60.0), ...} from ['resnet20=20,60', ...] (Mbit/s)."""
    rates = {}
    for entry in entries:
        model, sep, values = entry.partition("=")
        if not sep or not model:
            raise ValueError(f"--rates={entry}: expected MODEL=RATE,RATE (Mbit/s)")
        try:
            parsed = tuple(float(v) for v in values.split(","))
        except ValueError:
            raise ValueError(f"--rates={entry}: rates must be numbers (Mbit/s)") from None
        if len(parsed) != 2 or not all(r > 0 for r in parsed):
            raise ValueError(f"--rates={entry}: expected two rates > 0 (Mbit/s)")
        rates[model] = parsed
    return rates


SPECS = ("pscpu/xring", "scatter/xring", "collective")  # the CPU ones


PACKINGS = ("t_1", "t_4", "t_16", "t_bytes")


WIRES = ("float32", "float16", "bfloat16")


def wire_flags(wire):
    """The towertrain flags that send the packs in `wire`."""
    if wire == "float32":
        return []
    return ["--compact_gradient_transfer", f"--compact_transfer_dtype={wire}"]


def exchanges(pack_mb, specs=("pscpu/xring",), packings=PACKINGS, wires=("float32",)):
    """(label, towertrain flags) of the exchanges timed at each rate, in run
    order: each packing with every spec in turn, so specs interleave, each
    spec in every wire precision. With one spec a label is the packing
    ("t_1"), with several "t_1 scatter/xring"; a wire other than float32
    adds its name ("t_1 float16")."""
    packing_flags = {"t_1": [], "t_4": ["--gradient_repacking=4"],
                     "t_16": ["--gradient_repacking=16"],
                     "t_bytes": [f"--gradient_pack_mb={pack_mb:g}"]}
    runs = []
    for packing in packings:
        for spec in specs:
            for wire in wires:
                label = packing if len(specs) == 1 else f"{packing} {spec}"
                label += "" if wire == "float32" else f" {wire}"
                runs.append((label, ["--variable_update=collective_all_reduce",
                                     f"--all_reduce_spec={spec}", *packing_flags[packing],
                                     *wire_flags(wire)]))
    return runs


def bytes_ratio(half_bytes, float_bytes):
    """Bytes sent per step in half precision over float32's (expected ~0.5)."""
    return half_bytes / float_bytes if float_bytes else None


def spec_ratios(times_a, times_b):
    """Per-round ratios a / b of two specs' step times (same rounds, in order)."""
    return [a / b for a, b in zip(times_a, times_b)]


def step_time(images_per_sec, batch_per_worker, workers):
    """Seconds of one worker's step, from a rate over `workers` workers' images."""
    return batch_per_worker * workers / images_per_sec


def exposed_fraction(t_n, t_indep, t_1):
    """(t_N - t_indep) / (t_1 - t_indep): the part of one pack's exchange time
    that N packs leave exposed; None where one pack costs nothing."""
    if t_1 <= t_indep:
        return None
    return (t_n - t_indep) / (t_1 - t_indep)


def summary(values):
    """(median, min, max)."""
    return statistics.median(values), min(values), max(values)


def tbf_command(namespace, link, rate_mbit):
    """The tc command limiting `link` to rate_mbit: a burst of one GSO
    segment (64 KB, so large segments pass whole) and up to 400 ms queued
    (dropping sooner would add TCP retransmits to what is measured)."""
    return ["ip", "netns", "exec", namespace, "tc", "qdisc", "replace", "dev", link, "root",
            "tbf", "rate", f"{rate_mbit:g}mbit", "burst", "64kb", "latency", "400ms"]


def worker_command(model, flags, task, steps, warmup, cluster, devices=1):
    base = [sys.executable, "-m", "towertrain", f"--model={model}", "--device=cpu",
            f"--num_gpus={devices}", f"--batch_size={BATCH}", f"--num_batches={steps}",
            f"--num_warmup_batches={warmup}", f"--display_every={steps}",
            "--num_intra_threads=1", *flags]
    if cluster:
        hosts = ",".join(f"{a}:{PORT}" for a in ADDRESSES)
        base += [f"--worker_hosts={hosts}", f"--task_index={task}",
                 "--collective_timeout_secs=300"]
    return base


# ---- the link ----

def _sh(*command, check=True):
    return subprocess.run(command, check=check, capture_output=True, text=True)


def remove_link():
    for namespace in NAMESPACES:
        _sh("ip", "netns", "del", namespace, check=False)


def make_link():
    remove_link()
    for namespace in NAMESPACES:
        _sh("ip", "netns", "add", namespace)
    _sh("ip", "link", "add", LINKS[0], "type", "veth", "peer", "name", LINKS[1])
    for namespace, link, address in zip(NAMESPACES, LINKS, ADDRESSES):
        _sh("ip", "link", "set", link, "netns", namespace)
        _sh("ip", "-n", namespace, "addr", "add", f"{address}/24", "dev", link)
        _sh("ip", "-n", namespace, "link", "set", link, "up")
        _sh("ip", "-n", namespace, "link", "set", "lo", "up")


def set_rate(rate_mbit):
    for namespace, link in zip(NAMESPACES, LINKS):
        _sh(*tbf_command(namespace, link, rate_mbit))


def tx_bytes():
    out = _sh("ip", "-n", NAMESPACES[0], "-s", "-j", "link", "show", LINKS[0]).stdout
    return json.loads(out)[0]["stats64"]["tx"]["bytes"]


# ---- the runs ----

def run_pair(model, flags, args, cluster):
    """Both workers at once; (worker 0's step seconds, tx bytes, packs line)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
    env.pop("TF_CONFIG", None)
    before = tx_bytes()
    procs = [subprocess.Popen(["ip", "netns", "exec", ns,
                               *worker_command(model, flags, k, args.steps, args.warmup,
                                               cluster, args.devices_per_worker)],
                              cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
             for k, ns in enumerate(NAMESPACES)]
    try:
        outs = [p.communicate(timeout=args.timeout)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    for p, out in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError(f"{model} {flags}: exit {p.returncode}:\n{out[-3000:]}")
    # A cluster's chief prints its images/sec, counting both workers';
    # independent workers each their own.
    rates = []
    for out in (outs[:1] if cluster else outs):
        match = TOTAL.search(out)
        if not match:
            raise RuntimeError(f"no 'total images/sec' in:\n{out[-2000:]}")
        rates.append(float(match.group(1)))
    workers = len(NAMESPACES) if cluster else 1
    seconds = statistics.mean(step_time(r, BATCH * args.devices_per_worker, workers)
                              for r in rates)
    packs = PACKS_LINE.search(outs[0])
    return seconds, tx_bytes() - before, packs.group(1).strip() if packs else "-"


def measure(args, rates):
    table = {}  # (model, rate or None, label) -> [seconds]
    sent = {}  # (model, rate, label) -> [bytes per step]
    packs = {}
    total_steps = args.steps + args.warmup
    for round_ in range(args.rounds):
        for model, model_rates in rates.items():
            seconds, _, _ = run_pair(model, ["--variable_update=independent"], args, False)
            table.setdefault((model, None, "t_indep"), []).append(seconds)
            print(f"round {round_ + 1} {model} t_indep: {1000 * seconds:.0f} ms", flush=True)
            for rate in model_rates:
                set_rate(rate)
                for label, flags in exchanges(args.pack_mb, args.specs, args.packings,
                                              args.wires):
                    seconds, nbytes, line = run_pair(model, flags, args, True)
                    table.setdefault((model, rate, label), []).append(seconds)
                    sent.setdefault((model, rate, label), []).append(nbytes / total_steps)
                    packs[(model, label)] = line
                    print(f"round {round_ + 1} {model} {rate:g} Mbit/s {label}: "
                          f"{1000 * seconds:.0f} ms, {nbytes / total_steps / 1e6:.2f} MB "
                          "sent per step", flush=True)
    return table, sent, packs


def measure_contention(args):
    """t_indep and t_1 on an unlimited link, interleaved."""
    set_rate(UNLIMITED_MBIT)
    times = {}  # (model, label) -> [seconds]
    for round_ in range(args.rounds):
        for model in args.rates:
            for label, flags, cluster in (("t_indep", ["--variable_update=independent"], False),
                                          ("t_1", exchanges(args.pack_mb, args.specs[:1])[0][1], True)):
                seconds, _, _ = run_pair(model, flags, args, cluster)
                times.setdefault((model, label), []).append(seconds)
                print(f"round {round_ + 1} {model} unlimited {label}: {1000 * seconds:.0f} ms",
                      flush=True)
    for model in args.rates:
        indep, one = (summary(times[(model, label)]) for label in ("t_indep", "t_1"))
        print(f"{model}: t_indep {_fmt(indep)}, t_1 unlimited {_fmt(one)} ms: the exchange's "
              f"CPU and gRPC add {(one[0] - indep[0]) / indep[0]:.0%} to a step")


def _one_pack_label(label):
    """The t_1 label of `label`'s spec and wire: exposed fractions divide by it."""
    return " ".join(["t_1", *label.split(" ")[1:]])


def _float32_label(label):
    """`label` in float32 (its wire's name dropped)."""
    return " ".join(part for part in label.split(" ") if part not in WIRES)


def report(table, sent, packs, rates, args):
    print(f"\nbatch {BATCH} per device, 2 workers x {args.devices_per_worker} CPU device(s), "
          f"--all_reduce_spec={args.all_reduce_spec}, {args.steps} timed steps "
          f"after {args.warmup}, {args.rounds} interleaved rounds; ms per step: median "
          "(min-max)")
    runs = exchanges(args.pack_mb, args.specs, args.packings, args.wires)
    for model, model_rates in rates.items():
        indep = summary(table[(model, None, "t_indep")])
        print(f"\n{model}: t_indep {_fmt(indep)}")
        for label, _ in runs:
            print(f"  {label}: {packs.get((model, label), '-')}")
        print("| link | exchange | ms/step | exposed fraction | MB sent per worker per step |")
        print("|---|---|---|---|---|")
        for rate in model_rates:
            for label, _ in runs:
                one = summary(table[(model, rate, _one_pack_label(label))])
                times = summary(table[(model, rate, label)])
                fraction = exposed_fraction(times[0], indep[0], one[0])
                mb = statistics.median(sent[(model, rate, label)]) / 1e6
                print(f"| {rate:g} Mbit/s | {label} | {_fmt(times)} | "
                      f"{'-' if fraction is None else f'{fraction:.2f}'} | {mb:.2f} |")
                if _float32_label(label) != label:
                    base = _float32_label(label)
                    ratio = bytes_ratio(statistics.median(sent[(model, rate, label)]),
                                        statistics.median(sent[(model, rate, base)]))
                    step = times[0] / summary(table[(model, rate, base)])[0]
                    print(f"| {rate:g} Mbit/s | {label} / {base} | step time {step:.2f} | | "
                          f"bytes {ratio:.2f} |")
            for spec in args.specs:
                suffix = "" if len(args.specs) == 1 else f" {spec}"
                one = summary(table[(model, rate, f"t_1{suffix}")])
                print(f"| {rate:g} Mbit/s | (t_1 - t_indep) / t_indep{suffix} | "
                      f"{(one[0] - indep[0]) / indep[0]:.1f} | | |")
            first = args.specs[0]
            for other in args.specs[1:]:
                for packing in args.packings:
                    ratios = spec_ratios(table[(model, rate, f"{packing} {first}")],
                                         table[(model, rate, f"{packing} {other}")])
                    print(f"| {rate:g} Mbit/s | {packing}: {first} / {other} step time, "
                          f"per-round ratios | {_ratio_fmt(summary(ratios))} | | |")


def _ratio_fmt(stats):
    median, low, high = stats
    return f"{median:.2f} ({low:.2f}-{high:.2f})"


def _fmt(stats):
    median, low, high = (1000 * s for s in stats)
    return f"{median:.0f} ({low:.0f}-{high:.0f})"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=4, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps per run")
    parser.add_argument("--rates", action="append", default=None,
                        help="MODEL=RATE,RATE in Mbit/s, once per model (default: "
                        + " ".join(DEFAULT_RATES) + ")")
    parser.add_argument("--pack_mb", type=float, default=0.25,
                        help="--gradient_pack_mb of the byte-sized packs")
    parser.add_argument("--all_reduce_spec", default="pscpu/xring",
                        help="the collective exchange(s) timed, comma-separated to compare "
                        "them interleaved (" + ", ".join(SPECS) + ")")
    parser.add_argument("--packings", default=",".join(PACKINGS),
                        help="which of " + ", ".join(PACKINGS) + " to time at each rate "
                        "(t_1 is always timed: the exposed fractions divide by it)")
    parser.add_argument("--devices_per_worker", type=int, default=1,
                        help="logical CPU devices (towers) per worker")
    parser.add_argument("--wire", default="float32",
                        help="the precisions the packs cross in, comma-separated, among "
                        + ", ".join(WIRES) + " (each exchange timed in each)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per run")
    parser.add_argument("--contention", action="store_true",
                        help="time t_indep and t_1 on an unlimited link instead")
    args = parser.parse_args(argv)
    try:
        args.rates = parse_rates(args.rates or DEFAULT_RATES)
    except ValueError as error:
        parser.error(str(error))
    args.specs = tuple(s for s in args.all_reduce_spec.split(",") if s)
    unknown = [s for s in args.specs if s not in SPECS]
    if unknown or not args.specs or len(set(args.specs)) != len(args.specs):
        parser.error(f"--all_reduce_spec={args.all_reduce_spec}: give distinct specs among "
                     + ", ".join(SPECS))
    packings = [p for p in args.packings.split(",") if p]
    if any(p not in PACKINGS for p in packings):
        parser.error(f"--packings={args.packings}: choose among " + ", ".join(PACKINGS))
    args.packings = tuple(p for p in PACKINGS if p == "t_1" or p in packings)
    wires = [w for w in args.wire.split(",") if w]
    if any(w not in WIRES for w in wires) or len(set(wires)) != len(wires):
        parser.error(f"--wire={args.wire}: give distinct precisions among " + ", ".join(WIRES))
    if len(args.specs) > 1 and wires != ["float32"]:
        parser.error("--wire: with one --all_reduce_spec (the spec ratios compare float32)")
    # float32 first: the half-precision rows compare with it.
    args.wires = tuple(w for w in WIRES if w in wires or w == "float32")
    if (args.rounds < 1 or args.steps < 1 or args.warmup < 0 or not args.pack_mb > 0
            or args.devices_per_worker < 1):
        parser.error("--rounds, --steps and --devices_per_worker must be >= 1, --warmup >= 0, "
                     "--pack_mb > 0")
    return args


def main(argv=None):
    args = parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("bench_slow_link: needs root (ip netns, tc)")
    atexit.register(remove_link)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # atexit runs on SIGTERM too
    make_link()
    started = time.time()
    if args.contention:
        measure_contention(args)
    else:
        table, sent, packs = measure(args, args.rates)
        report(table, sent, packs, args.rates, args)
    print(f"\n{(time.time() - started) / 60:.1f} minutes")


if __name__ == "__main__":
    main()
