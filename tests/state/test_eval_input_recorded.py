"""--eval of a run trained on files scores files: without
--data_dir it would have scored synthetic data and printed that as the run's
accuracy (exit 0); now it stops with one line naming the recorded --data_dir,
exit 2, nothing written; with --data_dir it scores the eval split."""
import os

import pytest

from helpers.cifar_files import write_dataset
from helpers.cli import run_cases


@pytest.mark.slow
def test_eval_without_data_dir_of_a_run_trained_on_files_is_refused(tmp_path):
    data_dir = write_dataset(str(tmp_path / "cifar"), num_train=16, num_test=8)
    train_dir = str(tmp_path / "run")
    common = ["--device=cpu", "--batch_size=4", f"--train_dir={train_dir}"]
    (code, _, err), (refused, out, refusal), (scored, scores, _) = run_cases("train", [
        ["--model=trivial", "--num_batches=2", "--num_warmup_batches=0", f"--data_dir={data_dir}",
         *common],
        ["--eval", *common],
        ["--eval", f"--data_dir={data_dir}", *common]], tmp_path / "runs.json")
    assert code == 0, err
    files = sorted(os.listdir(train_dir))
    assert (refused, out) == (2, ""), out
    assert refusal == (f"towertrain: error: --eval: --train_dir={train_dir} was trained on "
                       f"files (--data_dir={data_dir}) but no --data_dir is given, so it would "
                       f"be scored on synthetic data; pass --data_dir={data_dir} (or the "
                       "directory of its eval split)\n")
    assert scored == 0 and "[8 examples" in scores and "synthetic" not in scores, scores
    assert sorted(os.listdir(train_dir)) == files
