"""bench/bench_staging_files.py's pure parts: the data it writes (read back by
towertrain's own CIFAR reader), the runs it compares, its arguments."""
import os

import pytest

from helpers import bench_scripts

staging_files = bench_scripts.load("bench_staging_files")


def test_the_data_it_writes_is_cifar_binary(tmp_path):
    staging_files.write_cifar_binary(str(tmp_path), 103)
    sizes = [os.path.getsize(tmp_path / f"data_batch_{i}.bin") for i in range(1, 6)]
    assert sum(sizes) == 103 * staging_files.RECORD_BYTES
    assert all(size % staging_files.RECORD_BYTES == 0 for size in sizes)
    labels = [f.read_bytes()[::staging_files.RECORD_BYTES]
              for f in sorted(tmp_path.glob("data_batch_*.bin"))]
    assert max(b for chunk in labels for b in chunk) < 10
    assert (tmp_path / "test_batch.bin").exists()


def test_the_runs_differ_only_in_input_and_staging():
    args = staging_files.parse_args(["--towers=2,8", "--rounds=3"])
    assert args.towers == [2, 8]
    runs = dict(staging_files.variants("/d"))
    assert list(runs) == ["synthetic", "files, depth 0", "files, depth 1"]
    base = staging_files.command(args, 8, [])
    assert "--num_gpus=8" in base and "--device=cpu" in base
    for label, flags in runs.items():
        assert staging_files.command(args, 8, flags)[:len(base)] == base
    assert runs["files, depth 0"][-1] == "--staging_depth=0"
    assert runs["files, depth 1"][-1] == "--staging_depth=1"
    assert "--data_dir=/d" in runs["files, depth 1"] and not runs["synthetic"]
    assert staging_files.ratios([2.0, 3.0], [1.0, 6.0]) == [2.0, 0.5]
    for bad in (["--rounds=0"], ["--towers=0"]):
        with pytest.raises(SystemExit):
            staging_files.parse_args(bad)
