"""Multi-worker vs one process: images/sec side by side.

    python bench/bench_multiworker.py [--model=resnet20] [--batch_size=32]
        [--num_batches=30] [--rounds=3]

A: 2 worker processes on 127.0.0.1 x 1 device each, --variable_update=
collective_all_reduce (gRPC + CollectiveReduceV2). B: 1 process x 2 logical
devices, --variable_update=replicated. Same global batch. With
--straggler_report_cost, B is A with --straggler_threshold=0 instead (the
report off: no timing in the step's tail), so A/B is the report's cost. Rounds alternate
A and B, and which goes first (A B, B A, ...: a machine whose load drifts
favours neither); with --together (report cost only) each round runs A and
B at the same time instead. Medians, the ratio A/B and the spread of the
rounds' own A/B ratios are printed. The chief's 'total
images/sec' is the cluster's (its step counts every worker's examples).
Every process is killed if a run exceeds its time limit.
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOTAL = re.compile(r"total images/sec: ([0-9.]+)")


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _common(args):
    return [sys.executable, "-m", "towertrain", f"--model={args.model}", "--device=cpu",
            f"--batch_size={args.batch_size}", f"--num_batches={args.num_batches}",
            "--num_warmup_batches=5", f"--display_every={args.num_batches}"]


def _run(commands, timeout, env=None, cwd=REPO, chiefs=(0,)):
    """Runs the commands at once (killed past `timeout`); the first one's
    'total images/sec' (with chiefs: those commands' totals, a list)."""
    env = dict(os.environ if env is None else env, TF_CPP_MIN_LOG_LEVEL="3")
    procs = [subprocess.Popen(c, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for c in commands]
    try:
        outs = [p.communicate(timeout=timeout)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, out in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError(f"exit {p.returncode}:\n{out[-2000:]}")
    totals = []
    for chief in chiefs:
        match = TOTAL.search(outs[chief])
        if not match:
            raise RuntimeError(f"no 'total images/sec' in:\n{outs[chief][-2000:]}")
        totals.append(float(match.group(1)))
    return totals if chiefs != (0,) else totals[0]


def _multiworker_commands(args, more=()):
    hosts = ",".join(f"127.0.0.1:{p}" for p in _free_ports(2))
    return [_common(args) + ["--num_gpus=1", "--variable_update=collective_all_reduce",
                             f"--worker_hosts={hosts}", f"--task_index={k}",
                             "--collective_timeout_secs=120", *args.worker_flags, *more]
            for k in range(2)]


def multiworker(args):
    return _run(_multiworker_commands(args), args.timeout)


def multiworker_report_off(args):
    return _run(_multiworker_commands(args, ["--straggler_threshold=0"]), args.timeout)


def report_on_and_off_together(args):
    """(on, off): both 2-worker runs at once, so a machine's changing load
    falls on both alike (each gets its fair share of the cores)."""
    return _run(_multiworker_commands(args) + _multiworker_commands(
        args, ["--straggler_threshold=0"]), args.timeout, chiefs=(0, 2))


def one_process(args):
    return _run([_common(args) + ["--num_gpus=2", "--variable_update=replicated"]],
                args.timeout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet20")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--num_batches", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--worker_flags", nargs="*", default=[],
                        help="more towertrain flags for the 2 worker processes only, e.g. "
                        "--worker_flags=--num_intra_threads=1")
    parser.add_argument("--straggler_report_cost", action="store_true",
                        help="compare 2 workers with the straggler report on and off")
    parser.add_argument("--together", action="store_true",
                        help="with --straggler_report_cost: run on and off at the same "
                        "time in each round (for a machine whose load changes)")
    args = parser.parse_args()
    configs = (("2 workers x 1 device", multiworker),
               ("1 process x 2 devices", one_process))
    if args.straggler_report_cost:
        configs = (("2 workers, report on", multiworker),
                   ("2 workers, report off", multiworker_report_off))
    results = {name: [] for name, _ in configs}
    load_at_start = os.getloadavg()[0]
    for round_ in range(args.rounds):
        if args.straggler_report_cost and args.together:
            for (name, _), total in zip(configs, report_on_and_off_together(args)):
                results[name].append(total)
                print(f"round {round_ + 1}: {name} (together): {total:.1f} images/sec",
                      flush=True)
            continue
        for name, fn in (configs if round_ % 2 == 0 else configs[::-1]):
            results[name].append(fn(args))
            print(f"round {round_ + 1}: {name}: {results[name][-1]:.1f} images/sec",
                  flush=True)
    print(f"\nload average (1 min): {load_at_start:.2f} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end")
    print(f"{args.model}, batch {args.batch_size}/device, global {2 * args.batch_size}, "
          f"{args.num_batches} timed steps, {args.rounds} rounds (median)")
    for name, values in results.items():
        print(f"  {name:24s} {statistics.median(values):8.1f} images/sec   "
              f"({', '.join(f'{v:.1f}' for v in values)})")
    a, b = (statistics.median(v) for v in results.values())
    what = ("report on / off" if args.straggler_report_cost
            else "multi-worker / one process")
    ratios = sorted(x / y for x, y in zip(*results.values()))
    print(f"  ratio {what}: {a / b:.3f} (the rounds' own: median "
          f"{statistics.median(ratios):.3f}, {ratios[0]:.3f} .. {ratios[-1]:.3f})")


if __name__ == "__main__":
    main()
