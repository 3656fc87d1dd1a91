"""bench/bench_threads.py: the runs it compares differ only in the pool, and
the CLI takes each of them as the bench means it."""
import re
import subprocess

import pytest

from helpers import bench_scripts

threads = bench_scripts.load("bench_threads")


def test_the_runs_differ_only_in_the_intra_op_flag():
    args = threads.parse_args(["--towers=1,8", "--threads=default,0,1"])
    assert (args.towers, args.threads) == ([1, 8], ["default", "0", "1"])
    default = threads.command(args, 8, "default")
    assert "--num_gpus=8" in default and "--variable_update=replicated" in default
    assert not any(flag.startswith("--num_intra_threads") for flag in default)
    assert threads.command(args, 8, "0") == default + ["--num_intra_threads=0"]
    assert "--variable_update=parameter_server" in threads.command(args, 1, "default")
    with pytest.raises(SystemExit):
        threads.parse_args(["--threads=default,many"])


def test_tensorflows_choice_reaches_the_run_as_asked():
    args = threads.parse_args(["--num_batches=1", "--num_warmup=0", "--model=trivial"])
    done = subprocess.run(threads.command(args, 2, "0"), capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"^Threads:\s+intra-op TensorFlow's choice \(every core\) "
                     r"\(--num_intra_threads\)$", done.stdout, re.MULTILINE), done.stdout
