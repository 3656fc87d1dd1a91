"""Where the run record is missing (or older than the optimizer's entry), the
checkpoint's own slots witness the optimizer: an sgd checkpoint (no slots)
resumed with --optimizer=adam is refused in one line (exit 2, nothing
written); with sgd it resumes."""
import os

from helpers.checkpoint_files import files_of
from helpers.cli import run_cases

COMMON = ["--model=trivial", "--device=cpu", "--batch_size=2", "--num_warmup_batches=0",
          "--display_every=100"]


def test_an_sgd_checkpoint_without_a_record_is_not_resumed_under_adam(tmp_path):
    run = str(tmp_path / "run")
    [(code, _, err)] = run_cases("train", [[*COMMON, "--num_batches=1", f"--train_dir={run}"]],
                                 tmp_path / "first.json")
    assert code == 0, err
    os.remove(os.path.join(run, "towertrain_run.json"))  # a record lost, or never written
    before = files_of(run)
    (refused, out, refusal), (resumed, resumed_out, resume_err) = run_cases("train", [
        [*COMMON, "--num_batches=2", "--optimizer=adam", f"--train_dir={run}"],
        [*COMMON, "--num_batches=2", f"--train_dir={run}"]], tmp_path / "resume.json")
    assert (refused, out) == (2, "")
    assert refusal == (
        f"towertrain: error: --optimizer=adam keeps optimizer slots momentum, velocity, but "
        f"{run}/ckpt-1 holds none and --train_dir={run} has no run record "
        "(towertrain_run.json) that says what it was trained with; pass the optimizer it was "
        "trained with (slots none: --optimizer=sgd; momentum: --optimizer=momentum), or use "
        "another --train_dir to start a new run\n")
    assert resumed == 0, resume_err
    assert f"from step 1 ({run}/ckpt-1)" in resumed_out
    assert "ckpt-1.index" in before and "ckpt-2.index" not in before
