"""A training file missing from the CIFAR-10 download stops the run:
one line naming the file and the way out, exit 2, before any step and
before anything is written. (A set of one's own, without the download's
batches.meta.txt, may hold any of the five files: the other input tests.)"""
import os

from helpers.cifar_files import write_dataset
from helpers.cli import run_cases


def test_a_download_missing_data_batch_5_is_refused_before_any_step(tmp_path):
    data_dir = write_dataset(str(tmp_path / "cifar-10-batches-bin"), num_train=40, num_test=10,
                             train_files=4)
    (tmp_path / "cifar-10-batches-bin" / "batches.meta.txt").write_text("airplane\n")
    train_dir = str(tmp_path / "run")
    [(code, out, err)] = run_cases("train", [[
        "--model=trivial", "--device=cpu", "--batch_size=4", "--num_batches=2",
        f"--data_dir={data_dir}", f"--train_dir={train_dir}"]], tmp_path / "runs.json")
    assert (code, out) == (2, ""), out
    assert err == (f"towertrain: error: --data_dir={data_dir}: data_batch_5.bin missing from "
                   "the CIFAR-10 binary download (batches.meta.txt is there; its training "
                   "split is data_batch_1.bin .. data_batch_5.bin); restore it from "
                   "cifar-10-binary.tar.gz, or delete batches.meta.txt to train on the files "
                   "present\n")
    assert not os.path.exists(train_dir)  # nothing written
