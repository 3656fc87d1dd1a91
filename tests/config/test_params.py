"""Params validation: every bad value or combination names its flag."""
import pytest

from towertrain import Params, ParamsError
from towertrain.engine.process import devices


@pytest.mark.parametrize("changes,message", [
    ({"model": "nope"}, r"--model=nope: unknown model; known models: .*resnet20"),
    ({"batch_size": 0}, r"--batch_size=0: must be >= 1"),
    ({"num_batches": 0}, r"--num_batches=0: must be >= 1"),
    ({"num_warmup_batches": -1}, r"--num_warmup_batches=-1: must be >= 0"),
    ({"display_every": 0}, r"--display_every=0"),
    ({"num_gpus": 0}, r"--num_gpus=0: must be >= 1"),
    # Wrong types name the field, instead of a TypeError from a comparison.
    ({"num_gpus": "2"}, r"--num_gpus='2': must be an integer \(got str\)"),
    ({"num_gpus": 2.0}, r"--num_gpus=2.0: must be an integer \(got float\)"),
    ({"use_fp16": 1}, r"--use_fp16=1: must be True or False \(got int\)"),
    ({"momentum": "0.9"}, r"--momentum='0.9': must be a number \(got str\)"),
    ({"train_dir": 3}, r"--train_dir=3: must be a string \(got int\)"),
    ({"init_learning_rate": -0.1}, r"--init_learning_rate=-0.1: must be > 0"),
    ({"variable_update": "mirrored"}, r"--variable_update=mirrored: must be one of"),
    ({"device": "tpu"}, r"--device=tpu: must be one of cpu, gpu"),
    ({"data_format": "NWHC"}, r"--data_format=NWHC"),
    ({"device": "cpu", "variable_update": "replicated", "all_reduce_spec": "nccl"},
     r"--all_reduce_spec=nccl: needs --device=gpu"),
    ({"device": "cpu", "variable_update": "replicated", "all_reduce_spec": "psgpu"},
     r"--all_reduce_spec=psgpu: needs --device=gpu"),
    ({"variable_update": "parameter_server", "all_reduce_spec": "ring"},
     r"--all_reduce_spec=ring: only applies to --variable_update=replicated"),
    ({"device": "cpu", "local_parameter_device": "gpu"},
     r"--local_parameter_device=gpu: needs --device=gpu"),
    # Flags their combination would ignore: the message names both flags.
    ({"num_batches": 5, "num_epochs": 2},
     r"--num_batches=5: conflicts with --num_epochs=2.*drop one"),
    ({"variable_update": "replicated", "local_parameter_device": "cpu"},
     r"--local_parameter_device=cpu: only applies to --variable_update=parameter_server "
     r"\(got --variable_update=replicated\)"),
    ({"eval": True, "train_dir": "d", "eval_during_training_every_n_steps": 5},
     r"--eval_during_training_every_n_steps=5: only applies to training; --eval ignores it"),
    ({"eval": True, "train_dir": "d", "num_epochs": 1},
     r"--num_epochs=1: only applies to training; --eval"),
    ({"eval": True, "train_dir": "d", "num_batches": 7}, r"--num_batches=7: .*--eval"),
    ({"eval": True, "train_dir": "d", "save_model_steps": 1}, r"--save_model_steps=1: .*--eval"),
    ({"eval": True, "train_dir": "d", "init_learning_rate": 0.1},
     r"--init_learning_rate=0.1: .*--eval"),
    ({"checkpoint": "d/ckpt-1"}, r"--checkpoint=d/ckpt-1: needs --eval \(the checkpoint to "
                                 r"evaluate\) or --train_dir"),
    ({"eval_batch_size": 0, "eval": True, "train_dir": "d"}, r"--eval_batch_size=0: must be >= 1"),
    ({"sync_batch_norm": True, "variable_update": "independent"},
     r"--sync_batch_norm=True: needs one model trained by every tower"),
    ({"use_fp16": True, "use_bf16": True}, r"--use_fp16=True: conflicts with --use_bf16"),
    ({"compact_gradient_transfer": True}, r"--compact_gradient_transfer=True: only applies "
     r"to --variable_update=replicated"),
    ({"device": "gpu", "variable_update": "replicated", "use_bf16": True,
      "compact_gradient_transfer": True}, r"NCCL cannot carry"),
    ({"summary_verbosity": 1}, r"--summary_verbosity=1: needs --train_dir or --summary_dir"),
    ({"trace_file": "t.txt"}, r"--trace_file=t.txt: must end in .json"),
    ({"trace_file": "t.json", "trace_step": 3, "num_warmup_batches": 3},
     r"--trace_step=3: is inside the warm-up \(--num_warmup_batches=3: steps 1..3\)"),
    ({"profile_steps": "5,2", "train_dir": "d"}, r"--profile_steps=5,2: needs 1 <= A <= B"),
    ({"eval": True, "train_dir": "runs/a", "checkpoint": "runs/b/ckpt-3"},
     r"--train_dir=runs/a: --eval reads --checkpoint=runs/b/ckpt-3, which is not in it"),
    ({"num_batches": 5, "num_warmup_batches": 1, "eval_during_training_every_n_steps": 7},
     r"--eval_during_training_every_n_steps=7: no evaluation would run: the run has 6 steps"),
])
def test_bad_values_name_the_flag(changes, message):
    with pytest.raises(ParamsError, match=message):
        Params(**changes)


def test_defaults_resolve_per_device():
    cpu = Params(device="cpu", variable_update="replicated")
    assert cpu.resolved_data_format == "NHWC"
    assert cpu.resolved_all_reduce_spec == "pscpu"
    assert cpu.resolved_parameter_device == "cpu"
    gpu = Params(device="gpu", num_gpus=4, variable_update="replicated")
    assert gpu.resolved_data_format == "NCHW"
    assert gpu.resolved_all_reduce_spec == "nccl"
    assert Params(device="gpu").resolved_all_reduce_spec is None  # not replicated


def test_num_batches_defaults_to_100_unless_given():
    assert Params().num_batches is None  # None: not given, so --num_epochs may set the steps
    assert Params().resolved_num_batches == 100
    assert Params(num_batches=7).resolved_num_batches == 7


def test_eval_of_a_checkpoint_inside_the_train_dir_is_fine():
    params = Params(eval=True, train_dir="runs/a", checkpoint="runs/a/ckpt-3")
    assert params.checkpoint == "runs/a/ckpt-3"


def test_eval_batch_size_is_accepted_where_evaluation_runs():
    assert Params(eval=True, train_dir="d", eval_batch_size=4).eval_batch_size == 4
    assert Params(eval_during_training_every_n_steps=2, eval_batch_size=4).eval_batch_size == 4
    assert Params().eval_batch_size is None


def test_replicated_with_one_device_is_fine():
    assert Params(device="cpu", num_gpus=1, variable_update="replicated").num_gpus == 1


def test_params_are_frozen_and_replace_revalidates():
    params = Params(device="cpu")
    with pytest.raises(Exception):
        params.num_gpus = 2
    assert params.replace(num_gpus=3).num_gpus == 3
    with pytest.raises(ParamsError, match="--num_gpus=0"):
        params.replace(num_gpus=0)


def test_more_gpus_than_present_fails_at_device_setup():
    with pytest.raises(devices.DeviceError, match=r"--num_gpus=64: only \d+ GPU\(s\) present"):
        devices.tower_devices("gpu", 64)


def test_several_towers_without_device_or_gpu_ask_for_device_cpu():
    # A tf_cnn_benchmarks line copied onto a machine without GPUs: no silent
    # logical CPU towers. (The conftest's machine has no GPU.)
    from towertrain import Trainer
    if devices.num_physical_gpus():
        pytest.skip("this machine has a GPU")
    with pytest.raises(devices.DeviceError, match=r"--num_gpus=2: no GPU is present \(no GPU "
                                                  r"driver is loaded.*\) and --device is not "
                                                  r"given; add --device=cpu"):
        Trainer(Params(model="trivial", num_gpus=2))


def test_more_logical_cpus_than_configured_after_init_fails_clearly():
    import tensorflow as tf
    tf.constant(1.0)  # runtime initialized with the conftest's 4 logical CPUs
    with pytest.raises(devices.DeviceError, match=r"--num_gpus=9: .*already initialized"):
        devices.tower_devices("cpu", 9)
    assert devices.tower_devices("cpu", 3) == ["/cpu:0", "/cpu:1", "/cpu:2"]


def test_trace_step_right_after_the_warm_up_is_fine():
    # The first timed step (and any without warm-up) may be traced.
    assert Params(trace_file="t.json", trace_step=4, num_warmup_batches=3).trace_step == 4
    assert Params(trace_file="t.json", trace_step=1, num_warmup_batches=0).trace_step == 1
