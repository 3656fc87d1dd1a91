"""The run record: --eval takes the run's model and dataset from it, and a
flag that contradicts it fails with one line naming both values."""
import json

import pytest

from towertrain import Params, ParamsError
from towertrain.commands import recorded_flags
from towertrain.state import run_record
from towertrain.errors import CheckpointError
from towertrain.state.run_record import RUN_INFO_FILE

RECORD = {"model": "cifar_cnn", "data_name": "cifar10", "num_classes": 10,
          "data_format": "NCHW", "input_shape": [3, 32, 32]}


def eval_params(**kw):
    return Params(eval=True, train_dir="/runs/a", device="cpu", **kw)


def test_read_missing_is_empty_and_present_is_the_json(tmp_path):
    assert run_record.read(str(tmp_path)) == {}
    assert run_record.read(None) == {}
    (tmp_path / RUN_INFO_FILE).write_text(json.dumps(RECORD))
    assert run_record.read(str(tmp_path)) == RECORD


@pytest.mark.parametrize("text", ["{not json", "[1, 2]"])
def test_read_a_damaged_record_names_the_file(tmp_path, text):
    (tmp_path / RUN_INFO_FILE).write_text(text)
    with pytest.raises(CheckpointError, match=f"{RUN_INFO_FILE}: .*delete it"):
        run_record.read(str(tmp_path))


def test_fill_takes_what_was_not_given():
    filled = recorded_flags.fill_params(eval_params(), set(), RECORD)
    assert (filled.model, filled.data_name) == ("cifar_cnn", "cifar10")
    # Checkpoints do not depend on the layout: the device's own default stays.
    assert filled.data_format is None and filled.resolved_data_format == "NHWC"


def test_fill_keeps_explicit_flags_even_at_their_default_value():
    params = eval_params(model="trivial")  # "trivial" is also --model's default
    assert recorded_flags.fill_params(params, {"model"}, RECORD).model == "trivial"


def test_fill_without_a_record_changes_nothing():
    params = eval_params()
    assert recorded_flags.fill_params(params, set(), {}) is params


def test_fill_names_the_record_for_a_model_this_process_lacks():
    with pytest.raises(ParamsError, match=rf"--model=mine: unknown model.*{RUN_INFO_FILE}"):
        recorded_flags.fill_params(eval_params(), set(), dict(RECORD, model="mine"))


def test_check_accepts_agreement_and_no_record():
    recorded_flags.check(RECORD, eval_params(model="cifar_cnn"), "--train_dir=/runs/a")
    recorded_flags.check({}, eval_params(model="resnet20"), "--train_dir=/runs/a")
    recorded_flags.check(RECORD, eval_params(model="cifar_cnn", data_format="NHWC"), "x")


@pytest.mark.parametrize("changes,message", [
    ({"model": "resnet20"}, "--model=resnet20 but --train_dir=/runs/a was trained with "
     "--model=cifar_cnn; drop --model or use another --train_dir"),
    ({"model": "cifar_cnn", "data_name": "imagenet"}, "--data_name=imagenet but "
     "--train_dir=/runs/a was trained with --data_name=cifar10; drop --data_name"),
    ({"model": "alexnet"}, "--model=alexnet but"),  # alexnet's own dataset is imagenet
])
def test_check_names_both_values(changes, message):
    with pytest.raises(CheckpointError) as err:
        recorded_flags.check(RECORD, eval_params(**changes), "--train_dir=/runs/a")
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_check_while_resuming_says_how_to_resume():
    params = Params(model="resnet20", train_dir="/runs/a", device="cpu")
    with pytest.raises(CheckpointError, match="--model=resnet20 but D was trained with "
                       "--model=cifar_cnn; pass --model=cifar_cnn to resume that run"):
        recorded_flags.check(RECORD, params, "D")


def test_check_resolves_the_models_default_dataset():
    params = Params(model="alexnet", train_dir="/runs/a", device="cpu")  # imagenet model
    with pytest.raises(CheckpointError, match="--data_name=imagenet but D was trained "
                       "with --data_name=cifar10"):
        recorded_flags.check(dict(RECORD, model="alexnet"), params, "D")


def test_directory_is_the_checkpoints_own(tmp_path):
    assert recorded_flags.directory(eval_params()) == "/runs/a"
    params = Params(eval=True, checkpoint="/runs/b/ckpt-3", device="cpu")
    assert recorded_flags.directory(params) == "/runs/b"
    params = Params(eval=True, checkpoint=str(tmp_path), device="cpu")
    assert recorded_flags.directory(params) == str(tmp_path)
