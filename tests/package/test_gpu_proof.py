"""bench/gpu_proof.py in no-GPU mode (CI): it says so, traces every path's
step for GPU device names and exits 0; the NCCL and staging paths put their
ops on the GPUs; the collective_all_reduce paths, traced for 2 workers x 2
GPUs, keep every collective, order each GPU's and cross workers with NCCL."""
import contextlib
import io
import os
import re
import sys
import types

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
    # The pack's cross-worker sum, and nothing else: the step's scalars ride
    # the pack (no collective of their own before the towers or after).
    for path in ("xring_nccl", "xring_2workers"):
        assert (f"\n{path:<15}traced, 2 workers x 2 GPUs: 1 CollectiveReduceV2, 2 NcclAllReduce"
                in out), out
    # scatter/xring: per GPU a reduce-scatter and a gather in the worker.
    assert (f"\n{'xring_scatter':<15}traced, 2 workers x 2 GPUs: 2 CollectiveGatherV2, "
            "2 CollectiveReduceScatterV2, ") in out, out
    assert out.count("every collective kept, one chain per GPU, NCCL across workers") == 3
    assert out.rstrip().endswith("run this on a machine with a GPU to prove them")


# The proof itself, end to end, on the suite's logical CPUs standing in for
# GPUs (the row groups in this process; the 2 workers in processes of their
# own): the rows, their references and the table a GPU run prints.
STAND_IN = ["--stand_in", "--in_process", "--model=proof_tiny_bn", "--towers_model=proof_tiny",
            "--batch_size=2", "--steps=2", "--timing_steps=0", "--warmup_s=120",
            "--budget_s=1000"]  # every group starts, however busy the cores


@pytest.fixture(scope="module")
def stand_in():
    """(the proof module, its exit status, the table's rows by name, all it printed)."""
    proof = bench_scripts.load("gpu_proof")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = proof.main(STAND_IN)
    text = out.getvalue()
    table = text[text.index(f"\n{proof.TABLE_HEAD}\n"):].strip().splitlines()[1:]
    names = [name for _, _, group in proof.STAGES for name in group]
    rows = {line.split()[0]: line for line in table if line.split()[0] in names}
    return proof, status, rows, text


def test_the_stand_in_proof_runs_every_row_in_order_of_need(stand_in):
    proof, status, rows, text = stand_in
    assert status == 0, text
    assert list(rows) == [name for _, _, names in proof.STAGES for name in names]
    assert list(rows)[:9] == ["kernels", "cpu_f32", "f32", "fp16", "fp16_auto", "one_x4",
                              "psgpu_x4", "ring_x4", "placement"]
    assert re.fullmatch(r"25 rows in \d+s: every row that ran holds", text.splitlines()[-1])
    assert rows["kernels"].endswith("ok: all_reduce, gather equal their input; reduce-scatter "
                                    "and NcclAllReduce not run: no NCCL on CPU devices")
    for name in ("cpu_f32", "one_x4", "ids_x4", "one_bn_x4"):
        assert rows[name].endswith("reference"), rows[name]


def _cells(line):
    """(row, against, rel diff, tol, replicas, images/s, seconds, result)."""
    cells = line.split(None, 7)
    return cells[:7] + [cells[7] if len(cells) > 7 else ""]


def test_half_precision_is_compared_with_the_float32_run_on_its_own_device(stand_in):
    # Not with a CPU run of itself, which the CPU refuses (emulated fp16, NCHW).
    _, _, rows, _ = stand_in
    for name, tolerance in [("fp16", "2e-02"), ("fp16_auto", "2e-02"), ("bf16", "5e-02")]:
        row, against, diff, tol, _, _, _, result = _cells(rows[name])
        assert (against, tol, result) == ("f32", tolerance, "ok"), rows[name]
        assert 0 < float(diff) <= float(tolerance)  # half precision: not the same numbers
    assert _cells(rows["f32"])[1] == "cpu_f32" and _cells(rows["f32"])[7] == "ok"


def test_several_towers_run_on_one_device_split_and_equal_one_tower(stand_in):
    _, _, rows, _ = stand_in
    for name in ("psgpu_x4", "ring_x4", "sync_bn_x4", "collective_x4", "staging_x4"):
        cells = _cells(rows[name])
        assert cells[4] == "identical" and cells[7] == "ok", rows[name]
        assert cells[1] == ("ids_x4" if name == "staging_x4" else
                            "one_bn_x4" if name == "sync_bn_x4" else "one_x4")
    assert _cells(rows["ps_gpu_x4"])[7] == "ok"
    assert _cells(rows["staging"])[1:2] == ["ids_x4"] and rows["staging"].endswith("ok")


def test_two_workers_are_compared_with_the_four_tower_run(stand_in):
    # 2 processes x 2 logical devices: the global batch of psgpu_x4.
    _, _, rows, _ = stand_in
    row, against, diff, tol, replicas, _, _, result = _cells(rows["workers_2x2"])
    assert (against, tol, replicas, result) == ("psgpu_x4", "1e-04", "identical", "ok")


def test_no_timed_steps_leaves_the_speeds_empty(stand_in):
    _, _, rows, text = stand_in
    for name in ("rn50_f32", "rn50_fp16"):
        cells = _cells(rows[name])
        assert cells[5] == "-" and cells[7] == "skipped: --timing_steps=0", rows[name]
    assert _cells(rows["tfcnn_f32"])[7] == "skipped: no --tfcnn_dir (a tf_cnn_benchmarks checkout)"
    assert "towertrain / tf_cnn_benchmarks" not in text


def test_placement_counts_what_ran_where(stand_in):
    _, _, rows, _ = stand_in
    assert re.search(r"ok: every op asked of a tower device ran there; \d+ ops on the host "
                     r"CPU \(.*\); [1-9]\d* device-to-host copies per step$",
                     rows["placement"]), rows["placement"]


def test_an_op_that_falls_back_to_the_cpu_fails_the_placement_check():
    """Soft placement would run the multiply asked of /gpu:0 on the CPU (no
    GPU here) and say nothing: the proof's placement check refuses it."""
    bench_scripts.load("gpu_proof")
    import gpu_proof_rows as rows_lib
    x = tf.constant(1.0)

    @tf.function
    def step():
        with tf.device("/gpu:0"):
            return x * 2.0
    with pytest.raises(rows_lib.PlacementError, match=r"^an op asked of a device ran "
                       r"elsewhere: .*GPU:0"):
        rows_lib.step_placement(step, ["/gpu:0"])
    assert tf.config.get_soft_device_placement()  # as it was
    assert float(step()) == 2.0  # what soft placement does: runs it on the CPU, silently


def test_on_a_gpu_each_process_splits_its_share_of_the_gpu_memory(monkeypatch):
    """The GPU side of the stand-in's configure (no GPU here: TensorFlow's
    calls recorded): 4 logical GPUs take 0.9 of an 81559 MB GPU, and each of
    the 2 worker processes sharing it splits a quarter of that into 2; TF32 off."""
    bench_scripts.load("gpu_proof")
    import gpu_proof_rows as rows_lib
    from towertrain.engine.process import devices
    gpu = tf.config.PhysicalDevice(name="/physical_device:GPU:0", device_type="GPU")
    calls = []
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: [gpu])
    monkeypatch.setattr(devices, "gpu_memory_mb", lambda: 81559)
    monkeypatch.setattr(tf.config, "set_logical_device_configuration",
                        lambda device, logical: calls.append(
                            [c.memory_limit for c in logical]))
    monkeypatch.setattr(tf.config.experimental, "enable_tensor_float_32_execution",
                        lambda on: calls.append(("tf32", on)))
    args = types.SimpleNamespace(stand_in=False)
    rows_lib.configure(args, 4)
    rows_lib.configure(args, 2, share=2)
    rows_lib.configure(args, 1)  # one tower: the GPU whole
    assert calls == [("tf32", False), [18350] * 4, ("tf32", False), [18350] * 2,
                     ("tf32", False)]


def test_a_group_whose_process_hangs_fails_its_rows_at_its_time(tmp_path):
    """A collective that never completes holds no proof: past the group's
    time its process is killed, the rows it printed stand and the others fail."""
    proof = bench_scripts.load("gpu_proof")
    hangs = [sys.executable, "-c", "import json, time; print(json.dumps({'row': 'kernels', "
             "'ok': True}), flush=True); time.sleep(30)"]
    args = types.SimpleNamespace(scratch=str(tmp_path))
    results = list(proof.run_rows(args, "first", ("kernels", "f32"), timeout=3, base=hangs))
    assert results == [{"row": "kernels", "ok": True},
                       {"row": "f32", "ok": False,
                        "note": "its process ended: killed after 3s"}]


def test_on_a_gpu_the_cpu_reference_sums_on_the_cpu_and_one_tower_avoids_nccl():
    """The GPU run's rows as Params (nothing runs): the CPU reference asks
    nothing of a GPU; one tower sums with psgpu (identity), never NCCL, which
    an install without NCCL lacks."""
    bench_scripts.load("gpu_proof")
    import gpu_proof_rows as rows_lib
    args = types.SimpleNamespace(stand_in=False, model="resnet20", towers_model="alexnet_cifar",
                                 batch_size=16, steps=3)
    cpu = rows_lib.make_params(args, rows_lib.ROWS["cpu_f32"])
    assert (cpu.device, cpu.all_reduce_spec, cpu.data_format) == ("cpu", "pscpu", "NCHW")
    for name in ("f32", "fp16", "bf16", "xla", "one_x4", "ids_x4", "staging"):
        params = rows_lib.make_params(args, rows_lib.ROWS[name])
        assert (params.device, params.all_reduce_spec) == ("gpu", "psgpu"), name


def test_the_proofs_processes_share_one_cuda_cache_at_its_largest():
    jit = bench_scripts.load("gpu_proof_jit")
    env = {"CUDA_CACHE_DISABLE": "1", "HOME": "/home/u"}
    jit.keep_cuda_cache(env)
    assert env == {"HOME": "/home/u", "CUDA_CACHE_MAXSIZE": str(4 * 1024 ** 3),
                   "CUDA_CACHE_PATH": os.path.join(os.path.expanduser("~"), ".nv",
                                                   "ComputeCache")}
    mine = {"CUDA_CACHE_MAXSIZE": "1000", "CUDA_CACHE_PATH": "/cache"}
    jit.keep_cuda_cache(mine)
    assert mine == {"CUDA_CACHE_MAXSIZE": "1000", "CUDA_CACHE_PATH": "/cache"}



def test_the_warm_up_runs_its_rows_once_before_any_row_and_says_so(stand_in):
    # On a GPU it fills the CUDA cache (by default; with --stand_in only where
    # --warmup_s asks, as here): its line comes before the first row's.
    _, _, _, text = stand_in
    out = text.splitlines()
    warm = [n for n, line in enumerate(out) if line.startswith("warm-up: ")]
    assert len(warm) == 1 and re.fullmatch(
        r"warm-up: f32, fp16, bf16, psgpu_x4 once in \d+s \(CUDA cache .+, 4 GiB\)",
        out[warm[0]]), out
    assert warm[0] < next(n for n, line in enumerate(out) if line.startswith("kernels "))
