"""The GPU proof on a fresh GPU machine: CUDA's JIT, paid once.

TensorFlow's wheels carry PTX but no native code for compute capability 9.0
(H100, H200), so each new process JIT-compiles the kernels it loads, unless
the driver's compute cache already holds them. The proof starts a process per
group of rows, two workers and four ResNet-50 runs: every one of them would
compile again if the cache were off or too small to keep them (the driver
evicts the oldest entries past CUDA_CACHE_MAXSIZE). So the proof's processes
share one cache at its largest size, and one warm-up process, before any
row, runs a step of the rows most processes share (float32, float16,
bfloat16; one tower and 4 logical GPUs) to fill it. The warm-up counts
against --budget_s like any row (the proof's minutes include the JIT) and
has its own limit, --warmup_s, so a slow JIT cannot take the whole budget;
the header says how long it took.
"""
import argparse
import os
import time

# The driver's maximum cache size (4 GiB); its default is far smaller.
CACHE_MAXSIZE = str(4 * 1024 ** 3)
# The rows whose kernels most later processes use (their references too).
ROWS = ("f32", "fp16", "bf16", "psgpu_x4")


def keep_cuda_cache(environ=os.environ):
    """Before CUDA starts in this process (its children inherit it): the JIT
    cache on, at its largest, in one place. A size or path already set is
    kept."""
    environ.pop("CUDA_CACHE_DISABLE", None)
    environ.setdefault("CUDA_CACHE_MAXSIZE", CACHE_MAXSIZE)
    environ.setdefault("CUDA_CACHE_PATH",
                       os.path.join(os.path.expanduser("~"), ".nv", "ComputeCache"))


def warm_up(args, stage_results):
    """Runs ROWS once, one step each, in one process of its own (its own
    scratch folder: nothing it writes is compared); returns the header's line.
    stage_results: gpu_proof.stage_results."""
    started = time.monotonic()
    warm = argparse.Namespace(**dict(vars(args), steps=1,
                                     scratch=os.path.join(args.scratch, "warmup")))
    os.makedirs(warm.scratch, exist_ok=True)
    failed = [r["row"] for r in stage_results(warm, "warmup", "rows", ROWS, args.warmup_s)
              if r.get("ok") is False]
    spent = time.monotonic() - started
    where = (f"CUDA cache {os.environ.get('CUDA_CACHE_PATH')}, "
             f"{int(os.environ.get('CUDA_CACHE_MAXSIZE', 0)) / 1024 ** 3:.0f} GiB")
    return (f"warm-up: {', '.join(ROWS)} once in {spent:.0f}s ({where})"
            + (f"; did not finish: {', '.join(failed)} (their rows JIT-compile the rest)"
               if failed else ""))
