"""--global_batch_size through the command line: the per-device batch (or,
with --batch_size, the accumulation steps) worked out for the topology, said
in the header and the run record; a topology that cannot carry it refused in
one line; a resume on another topology at the same global batch trains on the
same examples (the trivial model has no randomness: equal to one process
training the global batch whole)."""
import json
import os

import numpy as np

from helpers import cifar_files
from helpers.checkpoint_files import saved_tensors
from helpers.cli import run_cases

COMMON = ["--model=trivial", "--device=cpu", "--num_warmup_batches=0", "--display_every=100"]


def test_a_topology_that_cannot_carry_the_global_batch_is_refused(tmp_path):
    results = run_cases("train", [
        [*COMMON, "--num_gpus=2", "--global_batch_size=25", "--num_batches=1"],
        [*COMMON, "--num_gpus=2", "--global_batch_size=24", "--batch_size=5", "--num_batches=1"],
        [*COMMON, "--global_batch_size=0", "--num_batches=1"],
        [*COMMON, "--global_batch_size=8", "--batch_size=2", "--gradient_accumulation_steps=4",
         "--num_batches=1"],
    ], tmp_path / "refused.json")
    assert [code for code, _, _ in results] == [2, 2, 2, 2], results
    assert [err for _, _, err in results] == [
        "towertrain: error: --global_batch_size=25: does not divide over 1 worker x 2 devices "
        "(2); use a global batch that is a multiple of 2, or give --batch_size to accumulate "
        "the rest\n",
        "towertrain: error: --global_batch_size=24: not a multiple of --batch_size=5 x 1 worker "
        "x 2 devices (10), so no number of accumulation steps makes it; use a global batch "
        "that is a multiple of 10, or another --batch_size\n",
        "towertrain: error: --global_batch_size=0: must be >= 1\n",
        "towertrain: error: --global_batch_size=8: conflicts with --batch_size=2 and "
        "--gradient_accumulation_steps=4 together, which fix it already; drop one of the "
        "three\n"]


def test_a_resume_on_another_topology_keeps_the_global_batch(tmp_path):
    data_dir = cifar_files.write_dataset(str(tmp_path / "data"), 40, 8)
    run, reference = str(tmp_path / "run"), str(tmp_path / "reference")
    files = [*COMMON, f"--data_dir={data_dir}", "--data_name=cifar10", "--save_model_steps=100",
             "--distortions"]  # augmentation on: its draws must follow the topology change too
    (first, _, err1), (second, out, err2), (whole, _, err3) = run_cases("train", [
        # 2 devices holding 2 each: 2 accumulation steps make the 8.
        [*files, "--num_gpus=2", "--global_batch_size=8", "--batch_size=2", "--num_batches=3",
         f"--train_dir={run}"],
        # Resumed on 1 device without --batch_size: 8 per device, no accumulation.
        [*files, "--num_gpus=1", "--global_batch_size=8", "--num_batches=7",
         f"--train_dir={run}"],
        [*files, "--num_gpus=1", "--batch_size=8", "--num_batches=7",
         f"--train_dir={reference}"],
    ], tmp_path / "runs.json")
    assert (first, second, whole) == (0, 0, 0), err1 + err2 + err3
    assert ("Global batch: 8 per update (--global_batch_size): 8 per device x 1 device x "
            "1 worker; kept when the topology changes") in out, out
    assert ("Topology:    checkpoint written by 1 worker(s) x 2 device(s), now 1 x 1; same "
            "global batch 8: continues exactly") in out, out
    with open(os.path.join(run, "towertrain_run.json")) as f:
        record = json.load(f)
    now = {"global_batch_size": 8, "per_device": 8, "accumulation_steps": 1, "workers": 1,
           "devices_per_worker": 1, "set_by": "--global_batch_size"}
    assert record["topology"] == now
    assert record["topology_changes"] == [{"step": 3, "to": now, "from": dict(
        now, per_device=2, accumulation_steps=2, devices_per_worker=2)}]
    resumed, uninterrupted = saved_tensors(run), saved_tensors(reference)
    names = [n for n in uninterrupted if not n.startswith("engine/topology")]
    assert names and any("kernel" in n for n in names), names
    for name in names:
        np.testing.assert_allclose(resumed[name], uninterrupted[name], rtol=0, atol=1e-6,
                                   err_msg=name)
