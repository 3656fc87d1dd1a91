"""--eval needs only the eval split: a folder that holds CIFAR-10's
test_batch.bin alone evaluates a run trained on the full set (it was refused
for missing training files evaluation never reads), and a folder without the
eval file is refused naming that file."""
import os
import shutil

from helpers.cifar_files import write_dataset
from helpers.cli import run_cases


def test_eval_on_a_folder_of_the_eval_file_alone_scores_it(tmp_path):
    data_dir = write_dataset(str(tmp_path / "cifar"), num_train=16, num_test=8)
    eval_only, train_only = str(tmp_path / "eval_only"), str(tmp_path / "train_only")
    os.makedirs(eval_only)
    shutil.copy(os.path.join(data_dir, "test_batch.bin"), eval_only)
    shutil.copytree(data_dir, train_only)
    os.remove(os.path.join(train_only, "test_batch.bin"))
    train_dir = str(tmp_path / "run")
    common = ["--device=cpu", "--batch_size=4", f"--train_dir={train_dir}"]
    (code, _, err), (scored, scores, score_err), (refused, out, refusal) = run_cases("train", [
        ["--model=trivial", "--num_batches=2", "--num_warmup_batches=0", f"--data_dir={data_dir}",
         *common],
        ["--eval", f"--data_dir={eval_only}", *common],
        ["--eval", f"--data_dir={train_only}", *common]], tmp_path / "runs.json")
    assert code == 0, err
    assert scored == 0, score_err
    assert "[8 examples, cifar10 test_batch.bin]" in scores, scores
    assert (refused, out) == (2, "")
    assert refusal == (f"towertrain: error: --data_dir={train_only}: no CIFAR-10 binary files "
                       "found (expected test_batch.bin)\n")
