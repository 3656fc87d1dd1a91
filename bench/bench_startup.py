"""Start-up benchmark: seconds from launching the CLI to its first step line,
for this checkout and, side by side, another revision.

    python bench/bench_startup.py --against=HEAD~1 --rounds=5

Each round runs every model once per tree, in alternating order (these
machines drift +-20%, so only runs interleaved in one invocation compare);
the medians over the rounds are printed per model and tree. The other
revision is checked out into a temporary worktree and run from it with
PYTHONPATH, so both import their own towertrain.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRST_STEP = re.compile(r"^1\timages/sec")


def seconds_to_first_step(tree, model, num_gpus):
    """Wall seconds from the launch of `python -m towertrain` (run from `tree`)
    to its first step line; the run is then stopped."""
    env = dict(os.environ, PYTHONPATH=tree, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    command = [sys.executable, "-m", "towertrain", f"--model={model}", "--device=cpu",
               f"--num_gpus={num_gpus}", "--batch_size=8", "--num_batches=2",
               "--num_warmup_batches=0", "--display_every=1"]
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        for line in proc.stdout:
            if FIRST_STEP.match(line):
                return time.perf_counter() - started
    finally:
        proc.kill()
        proc.wait()
    raise RuntimeError(f"{' '.join(command)} (from {tree}) printed no first step line")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the other revision (git rev)")
    parser.add_argument("--models", default="trivial,cifar_cnn,resnet20")
    parser.add_argument("--num_gpus", type=int, default=2, help="CPU devices (towers)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        other = os.path.join(scratch, "other")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", other, args.against],
                       check=True, capture_output=True)
        try:
            trees = {"this": ROOT, args.against: other}
            seconds = {(tree, model): [] for tree in trees for model in args.models.split(",")}
            for round_number in range(args.rounds):
                order = list(trees) if round_number % 2 == 0 else list(trees)[::-1]
                for model in args.models.split(","):
                    for tree in order:
                        seconds[tree, model].append(
                            seconds_to_first_step(trees[tree], model, args.num_gpus))
            print(f"seconds to the first step line, median of {args.rounds} interleaved rounds "
                  f"({args.num_gpus} CPU devices)")
            print("model        " + "".join(f"{tree:>14}" for tree in trees) + "     ratio")
            for model in args.models.split(","):
                medians = [statistics.median(seconds[tree, model]) for tree in trees]
                print(f"{model:13}" + "".join(f"{m:14.2f}" for m in medians)
                      + f"{medians[0] / medians[1]:10.2f}")
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", other],
                           check=False, capture_output=True)


if __name__ == "__main__":
    main()
