"""The GPU proof: what one GPU can prove of towertrain's GPU paths, in at most 5 minutes.

    python bench/gpu_proof.py --tfcnn_dir=DIR     # on a machine with a GPU
    python bench/gpu_proof.py --stand_in          # the same proof on CPU devices

Rows in order of need, so a run cut short still proves the first ones; each
prints as it finishes, and a table of all of them ends the run:

  kernels        the V2 collectives (all-reduce, gather; reduce-scatter and
                 NcclAllReduce where the install has NCCL) with group size 1
                 and an ordering token, values checked
  f32            one tower float32 against the same steps on the CPU
  fp16(_auto)    --use_fp16, fixed loss scale 128 / automatic, against f32
  psgpu_x4,      replicated over 4 logical GPUs splitting the one GPU, against
  ring_x4        one tower on the same global batch; replicas bit-identical
  placement      psgpu x 4 with soft placement off: no op asked of a GPU ran
                 on the CPU; device-to-host copies per step counted
  rn50_f32,      ResNet-50 float32, towertrain and tf_cnn_benchmarks (needs
  tfcnn_f32      --tfcnn_dir) on the same GPU, NCHW, images/sec side by side
  then           bf16, --xla_compile, parameter server on the CPU and on the
                 GPU, staging over 1.5 epochs of examples with ids (each seen
                 as often as unstaged), and on 4 logical GPUs parameter server,
                 staging, --sync_batch_norm and collective_all_reduce (flat,
                 ring implementation), each against one tower; 2 processes x 2
                 logical GPUs on 127.0.0.1 against psgpu_x4; ResNet-50 fp16.

Rows with batch norm train --model; rows that compare N towers with one
tower train --towers_model, which has none (per-tower batch statistics would
differ from one tower's). NCCL cannot join logical GPUs of one GPU, so the
multi-tower rows use psgpu, ring and TensorFlow's ring collectives. TF32 is
off. Each group of rows runs in a process of its own (logical GPUs are set
before TensorFlow starts); no group starts after --budget_s seconds. On a
GPU one warm-up process runs first and fills the CUDA cache that every later
process reads (gpu_proof_jit.py: no native code for the H100's compute
capability in TensorFlow's wheels). Exit status 1 when a row fails.

--stand_in runs the same rows on logical CPU devices standing in for the GPUs
(NHWC, half precision emulated): the suite runs it, so the proof cannot rot
between GPU runs. Without a GPU and without --stand_in it traces each GPU
path's step for GPU device names instead (nothing runs; the collective paths
traced for 2 workers x 2 GPUs and their graphs checked) and exits 0. On a
machine whose driver shows a GPU that TensorFlow cannot use it says why and
exits 1.
"""
import argparse
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gpu_proof_jit as jit  # noqa: E402 - after the paths above
jit.keep_cuda_cache()  # before CUDA starts here or in any child (gpu_proof_jit.py)
import gpu_proof_rows as rows_lib  # noqa: E402
from gpu_proof_trace import PATHS, trace_only  # noqa: E402,F401 - PATHS: the traced paths

# Groups of rows in order of need: (name, kind, rows). kind: "rows" runs in a
# process with 4 logical GPUs, "workers" in 2 processes with 2 each,
# "towertrain" and "tfcnn" are one ResNet-50 command line each.
STAGES = [
    ("first", "rows", ("kernels", "cpu_f32", "f32", "fp16", "fp16_auto", "one_x4",
                       "psgpu_x4", "ring_x4", "placement")),
    ("rn50_f32", "towertrain", ("rn50_f32",)),
    ("tfcnn_f32", "tfcnn", ("tfcnn_f32",)),
    ("rest", "rows", ("bf16", "xla", "ps_cpu", "ps_gpu", "ids_x4", "staging", "staging_x4",
                      "ps_gpu_x4", "one_bn_x4", "sync_bn_x4", "collective_x4")),
    ("workers", "workers", ("workers_2x2",)),
    ("rn50_fp16", "towertrain", ("rn50_fp16",)),
    ("tfcnn_fp16", "tfcnn", ("tfcnn_fp16",)),
]
# Before any row on a GPU: CUDA's JIT, paid once (gpu_proof_jit.py).
WARMUP = ("warmup", "rows", jit.ROWS)
TFCNN_SCRIPT = os.path.join("scripts", "tf_cnn_benchmarks", "tf_cnn_benchmarks.py")
TOTAL = re.compile(r"total images/sec: ([0-9.]+)")
GRACE_S = 60  # a group started before --budget_s may run this long past it


def common_flags(args):
    """The flags every child process of the proof gets."""
    flags = [f"--model={args.model}", f"--towers_model={args.towers_model}",
             f"--batch_size={args.batch_size}", f"--steps={args.steps}"]
    return flags + (["--stand_in"] if args.stand_in else [])


def _pump(stream, lines):
    for line in stream:
        lines.put(line)
    lines.put(None)


def run_rows(args, stage, names, timeout, env=None, extra=(), base=None):
    """Starts the child processes of a group (one, or a cluster's workers with
    `extra` per worker) and yields each row's result as the first one prints
    it, until `timeout` seconds: a hung collective cannot hold the proof.
    Rows it never printed fail with the child's last words. base: the
    command line (default: this script's --stage)."""
    base = base or [sys.executable, os.path.abspath(__file__), f"--stage={stage}",
                    f"--scratch={args.scratch}", *common_flags(args)]
    logs = [os.path.join(args.scratch, f"{stage}.{k}.err") for k in range(len(extra) or 1)]
    procs = []
    for k, more in enumerate(extra or [()]):
        with open(logs[k], "w") as err:  # a file: a full pipe would stall the child
            procs.append(subprocess.Popen(
                [*base, *more], stdout=subprocess.PIPE if k == 0 else subprocess.DEVNULL,
                stderr=err, text=True, env=dict(os.environ, **(env or {}))))
    lines = queue.Queue()
    threading.Thread(target=_pump, args=(procs[0].stdout, lines), daemon=True).start()
    deadline, done = time.monotonic() + timeout, set()
    try:
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break  # past its time
            if line is None:
                break
            if line.startswith("{"):
                result = json.loads(line)
                done.add(result["row"])
                yield result
    finally:
        killed = False
        for proc in procs:
            try:
                proc.wait(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                killed = True
    why = [f"killed after {timeout:.0f}s" if killed else "ended without them"]
    for proc, log in zip(procs, logs):
        if proc.returncode and not killed:
            with open(log) as f:
                why = f.read().strip().splitlines() or [f"exit {proc.returncode}"]
            break
    for name in names:
        if name not in done:
            yield {"row": name, "ok": False, "note": f"its process ended: {why[-1][:300]}"}


def images_per_sec(args, name, timeout):
    """One ResNet-50 command line (towertrain or tf_cnn_benchmarks), timed."""
    program, precision = name.split("_")
    device, fmt = ("cpu", "NHWC") if args.stand_in else ("gpu", "NCHW")
    flags = [f"--model={args.resnet_model}", f"--device={device}", "--num_gpus=1",
             f"--batch_size={args.resnet_batch_size}", f"--data_format={fmt}",
             f"--num_batches={args.timing_steps}", f"--num_warmup_batches={args.warmup_steps}",
             f"--display_every={max(args.timing_steps, 1)}", "--variable_update=replicated"]
    if program == "rn50":  # one GPU: no NcclAllReduce of one member (NCCL may be absent)
        flags.append(f"--all_reduce_spec={'pscpu' if args.stand_in else 'psgpu'}")
    if precision == "fp16":
        flags += ["--use_fp16"] + (["--allow_emulated_precision"]
                                   if args.stand_in and program == "rn50" else [])
    env = dict(os.environ)
    if program == "tfcnn":
        if not args.tfcnn_dir:
            return {"ok": None, "note": "no --tfcnn_dir (a tf_cnn_benchmarks checkout)"}
        script = os.path.join(args.tfcnn_dir, TFCNN_SCRIPT)
        command, cwd = [args.tfcnn_python, script, *flags], os.path.dirname(script)
        env["TF_USE_LEGACY_KERAS"] = "1"  # its layers are tf_keras'
    else:
        command, cwd = [sys.executable, "-m", "towertrain", *flags], rows_lib.REPO
    if not args.timing_steps:
        return {"ok": None, "note": "--timing_steps=0"}
    try:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "note": f"did not finish within {timeout:.0f}s"}
    found = TOTAL.search(done.stdout)
    if done.returncode or not found:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines() or ["no output"]
        return {"ok": False, "note": f"exit {done.returncode}: {last[-1][:300]}"}
    return {"ok": True, "images_per_sec": float(found.group(1)),
            "note": f"{args.resnet_model}, {args.resnet_batch_size} per device, {fmt}"}


def stage_results(args, stage, kind, names, timeout):
    if kind in ("towertrain", "tfcnn"):
        for name in names:
            started = time.monotonic()
            result = images_per_sec(args, name, timeout)
            yield dict(result, row=name, seconds=time.monotonic() - started)
        return
    if kind == "rows":
        yield from (rows_lib.run_stage(args, names) if args.in_process else
                    run_rows(args, stage, names, timeout))
        return
    hosts = ",".join(f"127.0.0.1:{port}" for port in free_ports(2))
    # Both workers on the one GPU (CUDA_VISIBLE_DEVICES says so, so neither
    # maps what it was not given), each splitting it into 2 logical GPUs.
    yield from run_rows(args, stage, names, timeout, env=None if args.stand_in else
                        {"CUDA_VISIBLE_DEVICES": args.first_gpu},
                        extra=[(f"--worker_hosts={hosts}", f"--task_index={k}")
                               for k in range(2)])


def free_ports(count):
    import socket
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def relative_diff(a, b):
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-12))


def judge(result, scratch):
    """The row's verdict ('ok', 'MISMATCH', 'FAILED', 'skipped', 'reference')
    and its comparison with its reference row."""
    row = rows_lib.ROWS.get(result["row"])
    result.setdefault("ok", True)
    if result["ok"] is None:
        return dict(result, verdict="skipped")
    if not result["ok"]:
        return dict(result, verdict="FAILED")
    if result.get("ids_seen_ok") is False:
        return dict(result, verdict="MISMATCH")  # its note: how often each id was seen
    if row is None or row.reference is None:
        return dict(result, verdict="reference" if row and row.model and
                    result["row"] != "placement" else "ok")
    own = os.path.join(scratch, f"{result['row']}.npz")
    other = os.path.join(scratch, f"{row.reference}.npz")
    if not os.path.exists(other):
        return dict(result, verdict="FAILED", note=f"its reference {row.reference} did not run")
    mine, theirs = np.load(own), np.load(other)
    diff = relative_diff(mine["weights"], theirs["weights"])
    loss_diff = relative_diff(mine["losses"], theirs["losses"])
    ok = (diff <= row.tolerance and loss_diff <= 10 * row.tolerance
          and result.get("replicas_identical") is not False)
    notes = [n for n, bad in [("replicas differ", result.get("replicas_identical") is False),
                              (f"losses differ by {loss_diff:.1e}",
                               loss_diff > 10 * row.tolerance)] if bad]
    return dict(result, verdict="ok" if ok else "MISMATCH", diff=diff,
                note="; ".join(notes) or result.get("note"))


def _number(value, form):
    return "-" if value is None else format(value, form)


def table_line(result):
    """One row of the table; every number may be missing ('-')."""
    row = rows_lib.ROWS.get(result["row"])
    replicas = {True: "identical", False: "DIFFER", None: "-"}[result.get("replicas_identical")]
    tolerance = row.tolerance if row and result.get("diff") is not None else None
    against = row.reference if row and row.reference else "-"
    line = (f"{result['row']:<14}{against:<10}{_number(result.get('diff'), '.2e'):>10}"
            f"{_number(tolerance, '.0e'):>7}{replicas:>11}"
            f"{_number(result.get('images_per_sec'), '.1f'):>10}"
            f"{_number(result.get('seconds'), '.1f'):>7}  {result['verdict']}")
    return line + (f": {result['note']}" if result.get("note") else "")


TABLE_HEAD = (f"{'row':<14}{'against':<10}{'rel diff':>10}{'tol':>7}{'replicas':>11}"
              f"{'images/s':>10}{'s':>7}  result")


def ratio_line(results, model):
    """towertrain / tf_cnn_benchmarks images/sec per precision, where both ran."""
    speeds = {r["row"]: r.get("images_per_sec") for r in results}
    out = []
    for precision in ("f32", "fp16"):
        ours, theirs = speeds.get(f"rn50_{precision}"), speeds.get(f"tfcnn_{precision}")
        if ours and theirs:
            out.append(f"{model} {precision}: towertrain / tf_cnn_benchmarks = "
                       f"{ours / theirs:.3f} ({ours:.1f} / {theirs:.1f} images/sec)")
    return out


def describe_device(args):
    if args.stand_in:
        return ("stand-in: logical CPU devices in place of GPUs (4 for the 4 logical GPUs), "
                "NHWC, half precision emulated")
    try:
        name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader",
                               "-i", args.first_gpu], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        name = ""
    return f"{name or 'a GPU'} (GPU {args.first_gpu}), split into 4 logical GPUs for x4 rows"


def chosen_rows(text):
    """The rows --rows names and, recursively, their references (every row without it)."""
    every = [name for _, _, names in STAGES for name in names]
    if not text:
        return set(every)
    wanted = {name.strip() for name in text.split(",") if name.strip()}
    unknown = wanted - set(every)
    if unknown:
        raise SystemExit(f"--rows: no row {', '.join(sorted(unknown))}; the rows: "
                         f"{', '.join(every)}")
    while True:
        more = {rows_lib.ROWS[n].reference for n in wanted if n in rows_lib.ROWS} - {None}
        if more <= wanted:
            return wanted
        wanted |= more


def prove(args):
    """Runs every group of rows in order; prints each row as it comes and the
    table at the end. Returns the exit status."""
    import tensorflow as tf
    args.first_gpu = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0]
    if args.in_process:  # the row groups run here: their devices first
        rows_lib.configure(args, rows_lib.TOWERS)
    print(f"GPU proof: {describe_device(args)}; TensorFlow {tf.__version__}; "
          f"--model={args.model} (one tower, batch norm), --towers_model={args.towers_model}, "
          f"{args.batch_size} per device, {args.steps} steps compared", flush=True)
    started, results, wanted = time.monotonic(), [], chosen_rows(args.rows)
    with tempfile.TemporaryDirectory() as scratch:
        args.scratch = scratch
        if args.warmup_s > 0:
            print(jit.warm_up(args, stage_results), flush=True)
        for stage, kind, names in STAGES:
            names = tuple(n for n in names if n in wanted)
            if not names:
                continue
            spent = time.monotonic() - started
            if spent > args.budget_s:
                results += [{"row": n, "ok": None, "verdict": "skipped",
                             "note": f"not started: {spent:.0f}s > --budget_s"} for n in names]
                continue
            for result in stage_results(args, stage, kind, names,
                                        args.budget_s - spent + GRACE_S):
                results.append(judge(result, scratch))
                print(table_line(results[-1]), flush=True)
    print(f"\n{TABLE_HEAD}")
    for result in results:
        print(table_line(result))
    for line in ratio_line(results, args.resnet_model):
        print(line)
    failed = [r["row"] for r in results if r["verdict"] in ("FAILED", "MISMATCH")]
    print(f"{len(results)} rows in {time.monotonic() - started:.0f}s: "
          + (f"{len(failed)} failed ({', '.join(failed)})" if failed else
             "every row that ran holds"))
    return 1 if failed else 0


def child(args):
    """A group's process: its logical devices first, then its rows."""
    kind, names = next((k, n) for s, k, n in STAGES + [WARMUP] if s == args.stage)
    workers = kind == "workers"
    rows_lib.configure(args, 2 if workers else rows_lib.TOWERS, share=2 if workers else 1)
    if workers:  # joins the cluster before TensorFlow runs any op
        from towertrain.trainer import join_cluster
        join_cluster(rows_lib.make_params(args, rows_lib.ROWS[names[0]],
                                          (args.worker_hosts, args.task_index)))
    for result in rows_lib.run_stage(args, names):
        print(json.dumps(result), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet20", help="the one-tower and batch-norm rows")
    parser.add_argument("--towers_model", default="alexnet_cifar",
                        help="the rows that compare N towers with one (no batch norm)")
    parser.add_argument("--batch_size", type=int, default=16, help="per device")
    parser.add_argument("--steps", type=int, default=3, help="steps compared")
    parser.add_argument("--resnet_model", default="resnet50",
                        help="the model towertrain and tf_cnn_benchmarks are timed on")
    parser.add_argument("--resnet_batch_size", type=int, default=64)
    parser.add_argument("--timing_steps", type=int, default=60,
                        help="timed steps of each ResNet-50 run (0: none)")
    parser.add_argument("--warmup_steps", type=int, default=10)
    parser.add_argument("--tfcnn_dir", help="a tensorflow/benchmarks checkout (its "
                        "scripts/tf_cnn_benchmarks), needs tf_keras")
    parser.add_argument("--tfcnn_python", default=sys.executable,
                        help="the Python that runs tf_cnn_benchmarks (one with tf_keras)")
    parser.add_argument("--rows", help="only these rows, comma-separated (and their "
                        "references): a rerun of a few")
    parser.add_argument("--budget_s", type=float, default=270,
                        help="no group of rows starts after this many seconds")
    parser.add_argument("--warmup_s", type=float, help="the most seconds the warm-up "
                        "may take, counted in --budget_s (0: none; default 150 on a GPU, 0 "
                        "with --stand_in, which has no CUDA JIT)")
    parser.add_argument("--stand_in", action="store_true",
                        help="logical CPU devices stand in for the GPUs")
    parser.add_argument("--in_process", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    parser.add_argument("--worker_hosts", help=argparse.SUPPRESS)
    parser.add_argument("--task_index", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.warmup_s is None:
        args.warmup_s = 0 if args.stand_in else 150
    import towertrain  # noqa: F401 - sets TF_ENABLE_ONEDNN_OPTS before TensorFlow (NCHW on CPU)
    if args.stage:
        child(args)
        return 0
    if args.stand_in:
        return prove(args)
    from towertrain.engine.process import devices as devices_lib
    num_gpus = devices_lib.num_physical_gpus()
    if not num_gpus and devices_lib.gpu_hardware_present():
        # Tracing here would pass a GPU machine that cannot use its GPU.
        print(f"a GPU is present but TensorFlow cannot use it: "
              f"{devices_lib.why_gpus_are_missing()}. Nothing was proved.")
        return 1
    return prove(args) if num_gpus else trace_only(args)


if __name__ == "__main__":
    sys.exit(main())
