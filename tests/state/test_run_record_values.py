"""The run record's values, each against what the run was: the model's shapes,
the values a resume may change, the learning-rate entry, the training files
as their own reader lists them; and the comparisons at a resume, which hold
for equal values read back from the file (other objects than the run's)."""
import json
import os

import keras
import numpy as np
import pytest

import towertrain
from towertrain.errors import CheckpointError
from towertrain.state import run_record
from towertrain.state.resume import contract


def test_a_run_s_record_holds_its_model_s_shapes_its_run_and_its_learning_rate(tmp_path):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6, 5, 3)), keras.layers.Flatten(),
                              keras.layers.Dense(7, name="logits")], name="mine")
    rng = np.random.default_rng(0)
    images = rng.standard_normal((8, 6, 5, 3)).astype(np.float32)
    labels = rng.integers(0, 7, 8).astype(np.int32)
    params = towertrain.Params(device="cpu", train_dir=str(tmp_path / "run"), num_batches=3,
                               num_warmup_batches=1, init_learning_rate=0.05)
    trainer = towertrain.Trainer(params, model=model,
                                 input_source=towertrain.from_arrays(images, labels, 4))
    trainer.train(write=lambda line: None)
    trainer.close()
    with open(os.path.join(tmp_path, "run", "towertrain_run.json"), encoding="utf-8") as f:
        record = json.load(f)
    assert (record["model"], record["user_model"], record["num_classes"],
            record["input_shape"]) == ("mine", True, 7, [6, 5, 3])
    assert (record["accumulation_steps"], record["total_steps"]) == (1, 4)
    assert "learning_rate" in record, sorted(record)


def test_the_input_record_lists_each_dataset_s_files_with_its_own_reader(tmp_path):
    for name in ("train-00000-of-00002", "train-00001-of-00002", "data_batch_1.bin"):
        (tmp_path / name).write_bytes(b"")
    # Names built at run time, as a parsed flag's are (not the interned literals).
    imagenet, cifar10 = "".join(["image", "net"]), "".join(["cifar", "10"])
    assert run_record.training_input(imagenet, str(tmp_path), 10) == {
        "input_examples": 10, "input_files": ["train-00000-of-00002", "train-00001-of-00002"]}
    assert run_record.training_input(cifar10, str(tmp_path), 10) == {
        "input_examples": 10, "input_files": ["data_batch_1.bin"]}


@pytest.mark.parametrize("count", [5, 6])
def test_a_refused_input_names_five_files_each_and_more_by_first_and_last(count):
    names = [f"train-{i:05d}-of-{count:05d}" for i in range(count)]
    listed = (", ".join(names) if count <= 5 else
              f"{count} files, train-00000-of-{count:05d} .. train-{count - 1:05d}-of-{count:05d}")
    with pytest.raises(CheckpointError) as refused:
        contract.check_training_input({"input_examples": 100, "input_files": names},
                                        {"input_examples": 90, "input_files": names},
                                        "/data", "--train_dir=run")
    assert str(refused.value).startswith(
        f"--data_dir=/data holds 90 training examples per epoch ({listed}) but --train_dir=run "
        f"was trained on 100 ({listed}), and")


def test_equal_values_read_back_from_the_record_are_no_change():
    # Values as json.load gives them: equal, but other objects than the run's.
    read_back = json.loads('{"total_steps": 100000, "accumulation_steps": 1, '
                           '"data_name": "cifar10"}')
    assert contract.changes_at_resume(read_back, {"total_steps": int("100000"),
                                                    "accumulation_steps": 1}) == []
    assert run_record.recorded_values({"data_name": "".join(["cifar", "10"])}, set(),
                                      read_back) == {}


def test_a_user_model_s_run_resumed_on_another_dataset_is_refused():
    record = {"model": "mine", "data_name": "cifar10", "user_model": True}
    with pytest.raises(CheckpointError, match=r"^--data_name=imagenet but --train_dir=run was "
                                              r"trained with --data_name=cifar10; pass "):
        run_record.check(record, {"model": "mine_1", "data_name": "imagenet",
                                  "user_model": True}, "--train_dir=run")
