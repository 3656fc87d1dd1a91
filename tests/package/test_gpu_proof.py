"""bench/gpu_proof.py in no-GPU mode (CI): it says so, traces every path's
step for GPU device names and exits 0; the NCCL and staging paths put their
ops on the GPUs; the collective_all_reduce paths, traced for 2 workers x 2
GPUs, keep every collective, order each GPU's and cross workers with NCCL."""
import pytest
import tensorflow as tf

from helpers import bench_scripts


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")), reason="a GPU is present: "
                    "the proof would run, not trace")
def test_gpu_proof_traces_every_path_without_a_gpu(capsys):
    proof = bench_scripts.load("gpu_proof")
    assert proof.main(["--model=trivial", "--batch_size=2", "--steps=1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no GPU found")
    for path in proof.PATHS:
        assert f"\n{path:<15}traced, " in out
    assert "MISSING" not in out
    # The pack's cross-worker sum and the step's one scalar tail (the example
    # count rides in it: no collective of its own before the towers).
    for path in ("xring_nccl", "xring_2workers"):
        assert (f"\n{path:<15}traced, 2 workers x 2 GPUs: 2 CollectiveReduceV2, 2 NcclAllReduce"
                in out), out
    # scatter/xring: per GPU a reduce-scatter and a gather in the worker.
    assert (f"\n{'xring_scatter':<15}traced, 2 workers x 2 GPUs: 2 CollectiveGatherV2, "
            "2 CollectiveReduceScatterV2, ") in out, out
    assert out.count("every collective kept, one chain per GPU, NCCL across workers") == 3
    assert out.rstrip().endswith("run this on a machine with a GPU to prove them")
