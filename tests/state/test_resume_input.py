"""Extending a finished run on another training input is refused:
the run record keeps the training files' examples per epoch and
names, and a resume whose --data_dir holds others stops before any step
naming both and the way out (it failed at the first step with TensorFlow's
'Expected 1 components but got 0'). With the files back, the resume equals
an uninterrupted run."""
import json
import os

import numpy as np

from towertrain.state import run_record

from helpers import refusals
from helpers.cifar_files import write_dataset
from state.test_resume_settings import files_of, saved_tensors

FLAGS = ["--model=trivial", "--device=cpu", "--batch_size=4", "--num_warmup_batches=0",
         "--display_every=100"]
FILES = [f"data_batch_{i}.bin" for i in range(1, 6)]


def test_a_resume_on_fewer_files_is_refused_and_resumes_exactly_with_them_back(
        tmp_path, capsys):
    data_dir = write_dataset(str(tmp_path / "cifar"), num_train=40, num_test=8,
                             train_files=5)
    run, reference = str(tmp_path / "run"), str(tmp_path / "reference")
    common = [*FLAGS, f"--data_dir={data_dir}"]
    assert refusals.run_cli([*common, "--num_epochs=1", f"--train_dir={run}"], capsys)[0] == 0
    with open(os.path.join(run, run_record.RUN_INFO_FILE)) as f:
        record = json.load(f)
    assert (record["input_examples"], record["input_files"]) == (40, FILES)
    before = files_of(run)

    os.rename(os.path.join(data_dir, FILES[-1]), str(tmp_path / "aside.bin"))
    status, err = refusals.run_cli([*common, "--num_epochs=2", f"--train_dir={run}"], capsys)
    assert status == 2
    assert err == (
        f"towertrain: error: --data_dir={data_dir} holds 32 training examples per epoch "
        "(data_batch_1.bin, data_batch_2.bin, data_batch_3.bin, data_batch_4.bin) but "
        f"--train_dir={run} was trained on 40 (data_batch_1.bin, data_batch_2.bin, "
        "data_batch_3.bin, data_batch_4.bin, data_batch_5.bin; missing now: "
        "data_batch_5.bin), and its checkpoint holds the position in that input; restore "
        "the files it was trained on to resume that run, or use another --train_dir to start "
        "a new one on these files\n")
    assert files_of(run) == before  # nothing trained, nothing written

    os.rename(str(tmp_path / "aside.bin"), os.path.join(data_dir, FILES[-1]))
    for train_dir in (run, reference):
        assert refusals.run_cli([*common, "--num_epochs=2", f"--train_dir={train_dir}"],
                                capsys)[0] == 0
    resumed, uninterrupted = saved_tensors(run), saved_tensors(reference)
    assert sorted(resumed) == sorted(uninterrupted)
    for name in resumed:
        np.testing.assert_allclose(resumed[name], uninterrupted[name], rtol=0, atol=1e-6,
                                   err_msg=name)


def test_a_resume_on_the_same_file_names_holding_fewer_examples_is_refused(tmp_path, capsys):
    """The names alone agree: the count must decide too."""
    data_dir = write_dataset(str(tmp_path / "cifar"), num_train=40, num_test=8, train_files=5)
    run = str(tmp_path / "run")
    common = [*FLAGS, f"--data_dir={data_dir}", f"--train_dir={run}"]
    assert refusals.run_cli([*common, "--num_batches=1"], capsys)[0] == 0
    before = files_of(run)
    write_dataset(data_dir, num_train=30, num_test=8, train_files=5)  # same 5 names
    status, err = refusals.run_cli([*common, "--num_batches=2"], capsys)
    names = ", ".join(FILES)
    assert (status, err) == (2, (
        f"towertrain: error: --data_dir={data_dir} holds 30 training examples per epoch "
        f"({names}) but --train_dir={run} was trained on 40 ({names}), and its checkpoint "
        "holds the position in that input; restore the files it was trained on to resume "
        "that run, or use another --train_dir to start a new one on these files\n"))
    assert files_of(run) == before
