"""A global batch larger than an epoch of real data is refused before any step:
every epoch would be one partial batch of all its
examples, never the batch asked for, while the header and the learning rate
count that batch. An epoch ending with a partial batch after full ones, an
input built with its own epochs and an input repeating without epochs train."""
import os

import numpy as np
import pytest

from towertrain import Params, ParamsError, Trainer
from towertrain.input_pipeline import from_arrays

from helpers import refusals
from helpers.cifar_files import write_dataset

NUM_TRAIN = 10


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return write_dataset(str(tmp_path_factory.mktemp("cifar")), num_train=NUM_TRAIN, num_test=4)


def _cli(args, capsys, monkeypatch):
    with refusals.stopped_before_work(monkeypatch):
        return refusals.run_cli(["--model=trivial", "--device=cpu", *args], capsys)


def _refusal(per_device, devices, fix):
    return (f"--batch_size={per_device}: the global batch of {per_device * devices} "
            f"({per_device} per device x {devices} devices x 1 worker) is larger than the "
            f"{NUM_TRAIN} examples of an epoch (the files in --data_dir), so no step would "
            f"train on a full batch; {fix}")


@pytest.mark.parametrize("length", [["--num_epochs=1"], ["--num_batches=2"]])
def test_the_cli_refuses_a_global_batch_larger_than_the_files(
        length, data_dir, tmp_path, capsys, monkeypatch):
    train_dir = tmp_path / "run"
    status, err = _cli([f"--data_dir={data_dir}", "--num_gpus=2", "--batch_size=6",
                        f"--train_dir={train_dir}", *length], capsys, monkeypatch)
    assert status == 2
    assert err == "towertrain: error: " + _refusal(
        6, 2, "use a smaller --batch_size (at most 5 per device) or fewer devices") + "\n"
    assert not train_dir.exists() or not any(n.startswith("ckpt") for n in
                                             os.listdir(train_dir))
    # The global batch of the whole epoch (5 x 2 = 10) trains: one full batch.
    with pytest.raises(refusals.NotRefused):
        _cli([f"--data_dir={data_dir}", "--num_gpus=2", "--batch_size=5", *length], capsys,
             monkeypatch)


def test_more_devices_than_examples_says_fewer_devices(data_dir):
    # Library entry point, same data: 4 devices of 3 (12); 10 examples fill 2 per device.
    with pytest.raises(ParamsError) as refused:
        Trainer(Params(device="cpu", num_gpus=4, batch_size=3, data_dir=data_dir))
    assert str(refused.value) == _refusal(
        3, 4, "use a smaller --batch_size (at most 2 per device) or fewer devices")


def test_fewer_examples_than_devices(tmp_path, capsys, monkeypatch):
    tiny = write_dataset(str(tmp_path / "cifar"), num_train=3, num_test=2)
    status, err = _cli([f"--data_dir={tiny}", "--num_gpus=4", "--batch_size=1"], capsys,
                       monkeypatch)
    assert status == 2
    assert err.startswith("towertrain: error: --batch_size=1: the global batch of 4 (1 per "
                          "device x 4 devices x 1 worker) is larger than the 3 examples of an "
                          "epoch"), err
    assert err.endswith("; use at most 3 devices\n"), err


def _arrays(n):
    rng = np.random.default_rng(0)
    return rng.random((n, 32, 32, 3), dtype=np.float32), np.arange(n) % 10


def test_the_library_refuses_epochs_cut_from_an_endless_input_it_cannot_fill():
    # from_arrays repeats without end in full batches; Params(num_epochs=2)
    # makes it 2 exact epochs, each a single partial batch of 10.
    with pytest.raises(ParamsError) as refused:
        Trainer(Params(device="cpu", num_gpus=2, batch_size=8, num_epochs=2),
                input_source=from_arrays(*_arrays(NUM_TRAIN), 16))
    assert str(refused.value) == (
        "--num_epochs=2: from_arrays's global_batch=16 is larger than its 10 examples, so no "
        "step of an epoch would train on a full batch; give from_arrays a global_batch of at "
        "most 10")


def test_partial_batches_that_were_asked_for_still_train(data_dir, tmp_path):
    # An epoch of 34 in batches of 16 (16, 16, 2); epochs built by the input
    # itself (one partial batch, as asked); an endless input without epochs;
    # --eval of a run on the files (it never trains on their batches).
    cases = [(Params(device="cpu", data_dir=data_dir, eval=True, train_dir=str(tmp_path)),
              None, 1),
             (Params(device="cpu", num_gpus=2, batch_size=8, num_epochs=1),
              from_arrays(*_arrays(34), 16), 3),
             (Params(device="cpu", num_gpus=2, batch_size=8, num_epochs=1),
              from_arrays(*_arrays(NUM_TRAIN), 16, num_epochs=1), 1),
             (Params(device="cpu", num_gpus=2, batch_size=8, num_batches=2),
              from_arrays(*_arrays(NUM_TRAIN), 16), None)]
    for params, source, batches_per_epoch in cases:
        trainer = Trainer(params, input_source=source)
        assert trainer.plan.steps.batches_per_epoch == batches_per_epoch
        trainer.close()
