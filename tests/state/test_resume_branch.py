"""A resume from an earlier checkpoint never overwrites a later one:
--checkpoint=run/ckpt-4 while run holds ckpt-8 and ckpt-12 is refused in one
line naming them and the two ways on (exit 2, nothing written); the branch it
advises (the checkpoint and the record copied into a new folder) resumes."""
import glob
import json
import os
import shutil

from helpers.checkpoint_files import files_of
from helpers.cli import run_cases

COMMON = ["--model=trivial", "--device=cpu", "--batch_size=2", "--num_warmup_batches=0",
          "--display_every=100", "--num_batches=12", "--save_model_steps=4",
          "--max_ckpts_to_keep=10"]


def test_a_branch_from_an_earlier_checkpoint_is_refused_and_the_advised_copy_resumes(tmp_path):
    run, branch = str(tmp_path / "run"), str(tmp_path / "branch")
    (code, _, err), (refused, out, refusal) = run_cases("train", [
        [*COMMON, f"--train_dir={run}"],
        [*COMMON, f"--train_dir={run}", f"--checkpoint={run}/ckpt-4"]], tmp_path / "first.json")
    assert code == 0, err
    assert (refused, out) == (2, "")
    assert refusal == (f"towertrain: error: --checkpoint={run}/ckpt-4: --train_dir={run} holds "
                   "later checkpoints (ckpt-8, ckpt-12), which this run's saves would "
                   "overwrite; to branch from step 4 and keep them, copy ckpt-4.* and "
                   "towertrain_run.json into a new folder and give that as --train_dir, or "
                   "delete the later checkpoints to discard them (nothing was changed)\n")
    before = files_of(run)
    # The record as the first run left it: the refused run wrote nothing.
    assert json.loads(before["towertrain_run.json"])["final_step"] == 12

    os.makedirs(branch)
    for path in glob.glob(f"{run}/ckpt-4.*") + [f"{run}/towertrain_run.json"]:
        shutil.copy(path, branch)
    [(code, out, err)] = run_cases("train", [[*COMMON, f"--train_dir={branch}"]],
                                   tmp_path / "branch.json")
    assert code == 0, err
    assert f"from step 4 ({branch}/ckpt-4)" in out, out
    assert files_of(run) == before  # the later checkpoints as they were
    assert sorted(n for n in before if n.endswith(".index")) == [
        "ckpt-12.index", "ckpt-4.index", "ckpt-8.index"]
