"""One training run per --train_dir: while a training run
lives, a second one into the same train_dir is refused before any step with
one line naming the holder, exit 2, nothing written; a reader (--eval) is
never refused; a crash (SIGKILL) frees the lock, and the plain resume from
the crashed run's checkpoint equals an uninterrupted run."""
import os
import signal
import subprocess
import time

import numpy as np
import pytest


from helpers.checkpoint_files import committed_steps, files_of, saved_tensors
from helpers.cli import command, run_cases, unbuffered_env

COMMON = ["--model=trivial", "--device=cpu", "--batch_size=2", "--num_warmup_batches=0",
          "--display_every=1000", "--optimizer=momentum"]






@pytest.mark.slow
def test_a_live_run_holds_its_train_dir_readers_pass_and_a_crash_frees_it(tmp_path):
    run, reference = str(tmp_path / "run"), str(tmp_path / "reference")
    live = subprocess.Popen(command(*COMMON, "--num_batches=1000000", "--save_model_steps=20",
                                    f"--train_dir={run}"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=unbuffered_env())
    try:
        deadline = time.monotonic() + 120
        while not committed_steps(run):
            assert live.poll() is None, live.stderr.read()
            assert time.monotonic() < deadline, "no checkpoint within 120 s"
            time.sleep(0.02)
        os.kill(live.pid, signal.SIGSTOP)  # alive, holding the lock, writing nothing
        before = files_of(run)

        (code, out, err), (eval_code, eval_out, eval_err) = run_cases("train", [
            [*COMMON, "--num_batches=1000000", f"--train_dir={run}"],
            ["--eval", "--device=cpu", "--batch_size=2", f"--train_dir={run}"]],
            tmp_path / "while_live.json")
        assert (code, out) == (2, ""), out
        assert err == (f"towertrain: error: --train_dir={run} is in use by another training "
                       f"run (process {live.pid}); wait for it to end, stop it, or use "
                       "another --train_dir\n")
        assert eval_code == 0 and "Accuracy @ 1 = " in eval_out, eval_out + eval_err
        assert files_of(run) == before  # the refused run and the reader wrote nothing
    finally:
        live.kill()  # SIGKILL: the crash the lock must survive
        live.wait()
        live.stderr.close()

    last = committed_steps(run)[-1]
    (code, out, err), (ref_code, _, ref_err) = run_cases("train", [
        [*COMMON, f"--num_batches={last + 2}", f"--train_dir={run}"],
        [*COMMON, f"--num_batches={last + 2}", f"--train_dir={reference}"]],
        tmp_path / "after_crash.json")
    assert (code, ref_code) == (0, 0), err + ref_err
    assert f"Resumed:     from step {last} " in out, out
    resumed, uninterrupted = saved_tensors(run), saved_tensors(reference)
    assert sorted(resumed) == sorted(uninterrupted)
    for name in uninterrupted:
        np.testing.assert_allclose(resumed[name], uninterrupted[name], rtol=0, atol=1e-6,
                                   err_msg=name)


def test_the_lock_is_freed_when_a_run_ends_or_is_refused(tmp_path):
    """The library entry point: runs one after another in one process, a refused one
    between them, each take the lock and give it back."""
    from towertrain import Params, Trainer
    from towertrain.state.checkpoint import CheckpointError
    import helpers.cli

    def train(**kw):
        trainer = Trainer(Params(model="trivial", device="cpu", batch_size=2,
                                 num_warmup_batches=0, display_every=100,
                                 train_dir=str(tmp_path), **kw))
        try:
            return trainer.train(write=helpers.cli.quiet)
        finally:
            trainer.close()

    assert train(num_batches=1).steps == 1
    with pytest.raises(CheckpointError, match="--optimizer=adam but"):
        train(num_batches=2, optimizer="adam")
    assert train(num_batches=2).steps == 2
