"""docs/errors.md's "Errors a newcomer meets": each message in its table is what the
code says for that case (produced here, in-process), and each row is covered."""
import os
import re

import keras
import numpy as np
import pytest

from towertrain import Params, Trainer
from towertrain.engine.process import devices
from towertrain.input_pipeline import from_arrays
from towertrain.recipe import native_precision
from towertrain.state import writable

from helpers.doc_blocks import ROOT


def _section():
    with open(os.path.join(ROOT, "docs", "errors.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index("## Errors a newcomer meets")
    return text[start:text.index("\n## ", start + 1)]


def _arrays():
    return np.zeros((10, 32, 32, 3), np.float32), np.zeros(10, np.int32)


def _softmax_model():
    return keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Flatten(),
                             keras.layers.Dense(10), keras.layers.Softmax(name="probs")],
                            name="mine")


def _emulated(monkeypatch, why):
    monkeypatch.setattr(native_precision, "probe",
                        lambda device, dtype: native_precision.Support(False, why))


def _laptop(monkeypatch):
    """A machine without a GPU driver, with the CPU-only TensorFlow (the table's row)."""
    import tensorflow as tf
    monkeypatch.setattr(devices, "GPU_DEVICE_NODES", ())
    monkeypatch.setattr(tf.test, "is_built_with_cuda", lambda: False)


def _gpu_machine_with_tensorflow_cpu(monkeypatch):
    import tensorflow as tf
    monkeypatch.setattr(devices, "GPU_DEVICE_NODES", ("/",))  # present, as /dev/nvidia0
    monkeypatch.setattr(tf.test, "is_built_with_cuda", lambda: False)
    monkeypatch.setattr(devices, "num_physical_gpus", lambda: 0)


def _unknown_flags():
    from absl import flags
    from towertrain.commands import common
    from towertrain.config import flags as flags_lib
    flags_lib.define_flags()
    argv = ["towertrain", "--modl=x", "--num_gpu=2", "--zzz"]
    flags.FLAGS.unparse_flags()
    try:
        flags.FLAGS(argv)
    except flags.UnrecognizedFlagError as err:
        return common.unknown_flags_message(argv, err)
    finally:
        flags.FLAGS.unparse_flags()


def _pack_size_not_a_number():
    from absl import flags
    from towertrain.commands import common
    from towertrain.config import flags as flags_lib
    flags_lib.define_flags()
    flags.FLAGS.unparse_flags()
    try:
        flags.FLAGS(["towertrain", "--gradient_pack_mb=fast"])
    except flags.Error as err:
        return common.flag_error_message(err)
    finally:
        flags.FLAGS.unparse_flags()


def _auto_packs_in_a_short_warm_up():
    """1.2 MB of gradients: 2 sizes to time (one pack, 1 MB), 2 steps each."""
    model = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Flatten(),
                              keras.layers.Dense(100, name="logits")], name="mine")
    Trainer(Params(device="cpu", num_gpus=2, variable_update="replicated",
                   gradient_pack_mb="auto", num_warmup_batches=3, num_batches=1),
            model=model, input_source=from_arrays(*_arrays(), 4)
            ).train(write=lambda line: None)


def _momentum():
    from towertrain.config import flags as flags_lib
    flags_lib.check_command_line(Params(device="cpu", optimizer="rmsprop", momentum=0.5),
                                 {"momentum"})


def _resume_with_adam():
    from towertrain.state.resume import contract
    contract.check_state_settings({"optimizer": "momentum"}, {"optimizer": "adam"},
                                    "--train_dir=run")


def _resume_with_another_wire():
    from towertrain.state.resume import contract
    contract.check_state_settings(
        {"compact_gradient_transfer": True, "compact_transfer_dtype": "float16"},
        {"compact_gradient_transfer": True, "compact_transfer_dtype": "bfloat16"},
        "--train_dir=run")


def _disk_too_full():
    from towertrain.state import checkpoint as ckpt_lib
    ckpt_lib.check_free_space("run", needed=28774, free=8192)


def _save_failed():
    import tensorflow as tf
    from towertrain.state import checkpoint as ckpt_lib
    err = tf.errors.ResourceExhaustedError(
        None, None, "{{function_node __wrapped__SaveV2_dtypes_10_device_/job:localhost/"
        "replica:0/task:0/device:CPU:0}} run/ckpt-12_temp/part-00000-of-00001.data-00000-"
        "of-00001.tempstate5577927110427713005; No space left on device [Op:SaveV2]")
    raise ckpt_lib.save_failed(12, "run", err, "run/ckpt-6")


def _train_dir_in_use(mp):
    import fcntl
    import tempfile
    from towertrain.state.resume import train_dir_lock
    mp.chdir(tempfile.mkdtemp())
    os.mkdir("run")
    with open(os.path.join("run", train_dir_lock.LOCK_FILE), "w") as held:
        held.write("4242")  # the holder's pid, as a live run writes it
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX)  # another open file: flock refuses the second
        train_dir_lock.acquire("run")


def _download_missing_a_file(mp):
    import tempfile
    from towertrain.input_pipeline import cifar10
    mp.chdir(tempfile.mkdtemp())
    os.mkdir("cifar")
    for name in cifar10.TRAIN_FILES[:4] + [cifar10.DOWNLOAD_MARKER]:
        open(os.path.join("cifar", name), "wb").close()
    cifar10.find_files("cifar")


def _eval_without_data_dir():
    from towertrain.state import run_record
    run_record.check_eval_input({"data_dir": "/data/cifar"}, None, "--train_dir=run")


def _out_of_memory():
    import tensorflow as tf
    trainer = Trainer(Params(model="trivial", device="cpu", batch_size=256,
                             num_batches=1, num_warmup_batches=0))
    trainer._step_fn = lambda *args: (_ for _ in ()).throw(
        tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor"))
    try:
        trainer.step()
    finally:
        trainer.close()


def _input_out_of_memory(mp):
    import tensorflow as tf
    from towertrain.input_pipeline import synthetic

    def oom(self, devices):
        raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor")
    mp.setattr(synthetic.SyntheticInput, "create", oom)
    Trainer(Params(model="trivial", device="cpu", batch_size=10000000))


def _users_model_record(doing):
    from towertrain.state import run_record
    record = {"model": "mine", "user_model": True}
    if doing == "resume":
        run_record.check(record, {"model": "trivial", "data_name": "cifar10"},
                         "--train_dir=run")
    where = "--eval: --train_dir=run" if doing == "evaluate" else "--train_dir=run"
    run_record.check_rebuildable(record, where, doing)


def _resume_on_fewer_files():
    from towertrain.state.resume import contract
    files = [f"data_batch_{i}.bin" for i in range(1, 6)]
    contract.check_training_input(
        {"input_examples": 2000, "input_files": files},
        {"input_examples": 1600, "input_files": files[:4]}, "cifar", "--train_dir=run")


def _data_dir_a_file(mp):
    import tempfile
    mp.chdir(tempfile.mkdtemp())
    os.mkdir("cifar")
    open(os.path.join("cifar", "data_batch_1.bin"), "wb").close()
    Params(data_dir="cifar/data_batch_1.bin")


def _batch_larger_than_the_files(mp):
    import tempfile
    from helpers.cifar_files import write_dataset
    data_dir = write_dataset(os.path.join(tempfile.mkdtemp(), "cifar"), 10, 2)
    Trainer(Params(device="cpu", num_gpus=2, batch_size=8, data_dir=data_dir))


def _did_you_mean_model():
    try:
        Params(model="resnet-20")
    except ValueError as err:  # the table elides the list of registered names
        raise ValueError(str(err).split("known models: ")[0] + "known models: ...") from err


# Runs that fail safe: each refusal that keeps a run from training on as
# another one, or from ending in a traceback.
def _workers_on_different_train_dirs():
    from towertrain.state.resume import agreement
    agreement.check_rows([[1, 20, 1234], [1, -1, 0]], "run")


def _tf_config_without_collective(text):
    from towertrain.plan import cluster
    cluster.resolve(Params(model="trivial", device="cpu"), {"TF_CONFIG": text})


def _port_in_use(mp):
    import errno
    import socket
    from towertrain.config.cluster_spec import Cluster
    from towertrain.engine.distributed import joining

    def in_use(self, address):
        raise OSError(errno.EADDRINUSE, "Address already in use")
    mp.setattr(socket.socket, "bind", in_use)
    raise ValueError(joining.unserved_address(
        Cluster(("10.0.0.1:2222", "10.0.0.2:2222"), 0), RuntimeError("Could not start gRPC "
                                                                      "server")))


def _trainer_of(model, labels=None, **kw):
    images, default = _arrays()
    return Trainer(Params(device="cpu", **kw), model=model,
                   input_source=from_arrays(images, default if labels is None else labels, 4))


def _dense_model(name="mine"):
    return keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Flatten(),
                             keras.layers.Dense(10, name="logits")], name=name)


def _own_input_labels():
    """A user's Input subclass whose labels are 10 for a model of 10 classes."""
    import tensorflow as tf
    from towertrain.input_pipeline import split_to_devices
    from towertrain.input_pipeline.base import Input

    class OwnInput(Input):
        global_batch = 4

        def create(self, devices):
            images, labels = _arrays()
            with tf.device("/cpu:0"):
                self.batches = iter(tf.data.Dataset.from_tensor_slices(
                    (images, labels + 10)).batch(4).repeat())

        def tower_batches(self, devices):
            with tf.device("/cpu:0"):
                batch = next(self.batches)
            return split_to_devices(batch, devices)
    Trainer(Params(device="cpu", num_batches=1, num_warmup_batches=0), model=_dense_model(),
            input_source=OwnInput()).train(write=lambda line: None)


def _kernel_error_in_a_step():
    """The command line's line for TensorFlow's error in a step (the whole run:
    tests/commands/test_step_failure.py)."""
    import types
    import tensorflow as tf
    from towertrain.commands import train
    err = tf.errors.InvalidArgumentError(None, None, (
        "Graph execution error:\n\nDetected at node rows/Reshape defined at (most recent "
        "call last):\n  File \"x.py\", line 1\nInput to reshape is a tensor with 384 "
        "values, but the requested shape requires a multiple of 7\n\t [[{{node "
        "rows/Reshape}}]] [Op:__inference_step_1]"))
    raise RuntimeError(train.step_failure(err, types.SimpleNamespace(
        model="rows_of_seven", train_dir="run")))


def _frozen_model():
    model = _dense_model()
    model.trainable = False
    _trainer_of(model)


def _two_inputs():
    a, b = keras.Input((32, 32, 3), name="a"), keras.Input((32, 32, 3), name="b")
    joined = keras.layers.Concatenate()([keras.layers.Flatten()(a), keras.layers.Flatten()(b)])
    _trainer_of(keras.Model([a, b], keras.layers.Dense(10)(joined), name="mine"))


def _eval_data(batched):
    import tensorflow as tf
    from towertrain import EvalData
    trainer = _trainer_of(_dense_model())
    images, labels = _arrays()
    examples = tf.data.Dataset.from_tensor_slices((images, labels + (0 if not batched else 10)))
    try:
        trainer.evaluate(EvalData(examples.batch(5) if batched else examples, 10, "mine",
                                  5 if batched else None))
    finally:
        trainer.close()


def my_loss(labels, logits):
    import tensorflow as tf
    return tf.math.log(tf.zeros(tf.shape(labels)[0])) * 0.0


def _nan_in_arrays():
    images, labels = _arrays()
    images[7, 0, 0, 0] = np.nan
    from_arrays(images, labels, 4)


def _imagenet_label_zero(mp):
    import tempfile
    import tensorflow as tf
    from helpers.data_files import example, solid
    from towertrain.input_pipeline import imagenet
    mp.chdir(tempfile.mkdtemp())
    os.mkdir("imagenet")
    with tf.io.TFRecordWriter("imagenet/train-00000-of-00001") as writer:
        writer.write(example(solid((20, 100, 200)), 0))
    imagenet.check_sample(imagenet.find_files("imagenet"), 1000)


def _branch_over_later_checkpoints(mp):
    import tempfile
    import tensorflow as tf
    from towertrain.state.resume import branch
    mp.chdir(tempfile.mkdtemp())
    checkpoint = tf.train.Checkpoint(v=tf.Variable(1.0))
    for step in (16, 20, 24, 28, 32):
        checkpoint.write(f"run/ckpt-{step}")
    branch.check_no_later_checkpoints("run/ckpt-16", "run")


def _sgd_checkpoint_under_adam(mp):
    import tempfile
    import tensorflow as tf
    from towertrain.state.resume import contract
    mp.chdir(tempfile.mkdtemp())
    tf.train.Checkpoint(v=tf.Variable(1.0)).write("run/ckpt-1")  # no slots: an sgd run's
    contract.check_optimizer_witness({}, "run/ckpt-1", {"momentum", "velocity"}, "adam",
                                     "--train_dir=run")


def _damaged_checkpoint(mp):
    import glob
    import tempfile
    import tensorflow as tf
    from towertrain.state import checkpoint as ckpt_lib
    mp.chdir(tempfile.mkdtemp())
    saved = tf.train.Checkpoint(model={"w": tf.Variable(tf.range(4096, dtype=tf.float32))})
    saved.write("run/ckpt-1")
    saved.write("run/ckpt-2")
    path = glob.glob("run/ckpt-2.data-*")[0]
    data = bytearray(open(path, "rb").read())
    for i in range(len(data) // 3, len(data) // 3 + 64):
        data[i] ^= 0xFF
    with open(path, "wb") as f:
        f.write(bytes(data))
    ckpt_lib.check_whole("run/ckpt-2")


def _registered_model_export():
    from towertrain.state import export
    export._check_registered("mine_net", "run", None)


def _stuck_step():
    from towertrain.engine.run import watchdog
    watch = watchdog.Watchdog(timeout=None, where=lambda: " from run/ckpt-16, the last "
                              "checkpoint")
    watch._step, watch.slowest, watch._armed = 17, 2.1, True
    import tensorflow as tf
    watchdog.mark(watchdog.STEP_FUNCTION, tf.Variable(watchdog.EXCHANGE))  # the step's own mark
    raise RuntimeError(watch.message(312, watch.limit()))


def _stuck_step_of_a_worker():
    """The chief waits in step 17's exchange; worker task 1's mark says its towers."""
    import tempfile
    import tensorflow as tf
    from towertrain.config.cluster_spec import Cluster
    from towertrain.engine.run import exchange_marks, watchdog
    workers, folder = ("10.0.0.1:2222", "10.0.0.2:2222"), tempfile.mkdtemp()
    exchange_marks.ExchangeMarks(Cluster(workers, 1), folder).publish(17, "its towers", False)
    watch = watchdog.Watchdog(timeout=None, where=lambda: " from run/ckpt-16, the last "
                              "checkpoint",
                              marks=exchange_marks.ExchangeMarks(Cluster(workers, 0), folder))
    watch._step, watch.slowest, watch._armed = 17, 2.1, True
    watchdog.mark(watchdog.STEP_FUNCTION, tf.Variable(watchdog.EXCHANGE))
    raise RuntimeError(watch.message(312, watch.limit()))


def _nccl_not_loadable(mp):
    """A CUDA TensorFlow whose NCCL wheel is missing, on a machine of 2 GPUs."""
    from towertrain import plan
    from towertrain.config import machine
    from towertrain.engine.process import nccl_library
    mp.setattr(nccl_library, "has_nccl", lambda: False)
    mp.setattr(nccl_library, "tensorflow_folders",
               lambda: ["/venv/lib/python3.11/site-packages/nvidia/nccl/lib"])
    Trainer._check_devices(plan.lay_out(
        Params(model="trivial", device="gpu", num_gpus=2, variable_update="replicated"),
        machine=machine.Machine(gpus=2)))


def _compiled_model():
    model = _dense_model()
    model.compile(optimizer=keras.optimizers.AdamW(1e-3, weight_decay=0.5, clipnorm=1.0),
                  loss="sparse_categorical_crossentropy")
    _trainer_of(model)


def _subclassed_not_called():
    class Mine(keras.Model):
        def __init__(self):
            super().__init__(name="mine")
            self.logits = keras.layers.Dense(10)

        def call(self, x):
            return self.logits(keras.ops.reshape(x, (-1, 32 * 32 * 3)))
    model = Mine()
    model.build((None, 32, 32, 3))  # creates no variable in Keras 3
    _trainer_of(model)


def _nhwc_model_in_an_nchw_run():
    model = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Conv2D(4, 3, name="conv"),
                              keras.layers.Flatten(), keras.layers.Dense(10)], name="mine")
    _trainer_of(model, data_format="NCHW")


def _float_raw_pixels():
    images = (np.arange(10 * 32 * 32 * 3) % 256).astype(np.float32).reshape(10, 32, 32, 3)
    Trainer(Params(device="cpu"), model=_dense_model(),
            input_source=from_arrays(images, np.zeros(10, np.int32), 4))


def _used_up_trainer():
    trainer = _trainer_of(_dense_model(), num_batches=3, num_warmup_batches=0)
    trainer.train(write=lambda line: None)
    return trainer


def _closed_trainer():
    trainer = _trainer_of(_dense_model())
    trainer.close()
    return trainer


def _softmax_in_call():
    class Mine(keras.Model):
        def __init__(self):
            super().__init__(name="mine")
            self.logits = keras.layers.Dense(10)

        def call(self, x):
            return keras.ops.softmax(self.logits(keras.ops.reshape(x, (-1, 32 * 32 * 3))))
    model = Mine()
    model(np.zeros((1, 32, 32, 3), np.float32))
    _trainer_of(model)


CASES = {
    "softmax in call()": lambda mp: _softmax_in_call(),
    "compiled model": lambda mp: _compiled_model(),
    "subclassed model not called": lambda mp: _subclassed_not_called(),
    "mixed policy in a float32 run": lambda mp: _trainer_of(keras.Sequential(
        [keras.Input((32, 32, 3)), keras.layers.Flatten(),
         keras.layers.Dense(10, dtype="mixed_float16")], name="mine")),
    "NHWC model, NCHW params": lambda mp: _nhwc_model_in_an_nchw_run(),
    "float raw pixels": lambda mp: _float_raw_pixels(),
    "train twice": lambda mp: _used_up_trainer().train(write=lambda line: None),
    "step after close": lambda mp: _closed_trainer().step(),
    "num_gpus type": lambda mp: Params(num_gpus="2"),
    "global_batch": lambda mp: from_arrays(*_arrays(), 0),
    "num_gpus without device": lambda mp: (_laptop(mp),
                                           Trainer(Params(model="trivial", num_gpus=2))),
    "tensorflow-cpu on a GPU machine": lambda mp: (
        _gpu_machine_with_tensorflow_cpu(mp),
        Trainer(Params(model="trivial", device="gpu", num_gpus=2))),
    "input epochs": lambda mp: Trainer(Params(model="trivial", device="cpu"),
                                       input_source=from_arrays(*_arrays(), 4, num_epochs=2)),
    "epochs disagree": lambda mp: Trainer(
        Params(model="trivial", device="cpu", num_epochs=2),
        input_source=from_arrays(*_arrays(), 4, num_epochs=1)),
    "fp16": lambda mp: (_emulated(mp, "CPUs have no float16 arithmetic"),
                        Trainer(Params(model="trivial", device="cpu", use_fp16=True))),
    "bf16": lambda mp: (_emulated(mp, "CPU has neither avx512_bf16 nor amx_bf16"),
                        Trainer(Params(model="trivial", device="cpu", use_bf16=True))),
    "softmax": lambda mp: Trainer(Params(device="cpu"), model=_softmax_model(),
                                  input_source=from_arrays(*_arrays(), 4)),
    "unwritable": lambda mp: writable.check([("summary_dir", "/etc/hostname/events", False)]),
    "unknown flags": lambda mp: (_ for _ in ()).throw(ValueError(_unknown_flags())),
    "momentum": lambda mp: _momentum(),
    "pack size not a number": lambda mp: (_ for _ in ()).throw(
        ValueError(_pack_size_not_a_number())),
    "auto packs in a short warm-up": lambda mp: _auto_packs_in_a_short_warm_up(),
    "resume optimizer": lambda mp: _resume_with_adam(),
    "resume wire dtype": lambda mp: _resume_with_another_wire(),
    "disk too full": lambda mp: _disk_too_full(),
    "save failed": lambda mp: _save_failed(),
    "train_dir in use": _train_dir_in_use,
    "missing training file": _download_missing_a_file,
    "eval without data_dir": lambda mp: _eval_without_data_dir(),
    "out of memory": lambda mp: _out_of_memory(),
    "eval of a user's model": lambda mp: _users_model_record("evaluate"),
    "export of a user's model": lambda mp: _users_model_record("export"),
    "resume of a user's model": lambda mp: _users_model_record("resume"),
    "resume on fewer files": lambda mp: _resume_on_fewer_files(),
    "uint8 images": lambda mp: from_arrays(np.arange(256, dtype=np.uint8).reshape(
        64, 2, 2, 1), np.zeros(64, np.int32), 64),
    "model named twice": lambda mp: Trainer(Params(model="cifar_cnn", device="cpu"),
                                            model=_softmax_model()),
    "data_dir a file": _data_dir_a_file,
    "global batch larger than the files": _batch_larger_than_the_files,
    "global batch larger than the arrays": lambda mp: Trainer(
        Params(device="cpu", num_gpus=2, batch_size=8, num_epochs=2),
        input_source=from_arrays(*_arrays(), 16)),
    "did you mean a model": lambda mp: _did_you_mean_model(),
    "cpu float16 NCHW": lambda mp: Trainer(Params(
        model="trivial", device="cpu", data_format="NCHW", use_fp16=True,
        allow_emulated_precision=True)),
    "out of memory building the input": _input_out_of_memory,
    "workers on different train_dirs": lambda mp: _workers_on_different_train_dirs(),
    "TF_CONFIG without collective": lambda mp: _tf_config_without_collective(
        '{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}}'),
    "malformed TF_CONFIG": lambda mp: _tf_config_without_collective('{"cluster": '),
    "port in use": _port_in_use,
    "frozen model": lambda mp: _frozen_model(),
    "model without weights": lambda mp: _trainer_of(keras.Sequential(
        [keras.Input((32, 32, 3)), keras.layers.Flatten()], name="mine")),
    "two-input model": lambda mp: _two_inputs(),
    "eval labels outside the classes": lambda mp: _eval_data(batched=True),
    "eval data unbatched": lambda mp: _eval_data(batched=False),
    "labels of a user's Input": lambda mp: _own_input_labels(),
    "kernel error in a step": lambda mp: _kernel_error_in_a_step(),
    "NaN in from_arrays": lambda mp: _nan_in_arrays(),
    "NaN loss_fn": lambda mp: Trainer(
        Params(device="cpu", num_batches=1, num_warmup_batches=0), model=_dense_model(),
        input_source=from_arrays(*_arrays(), 4), loss_fn=my_loss).train(write=lambda l: None),
    "imagenet label 0": _imagenet_label_zero,
    "damaged checkpoint": _damaged_checkpoint,
    "branch over later checkpoints": _branch_over_later_checkpoints,
    "sgd checkpoint under adam without a record": _sgd_checkpoint_under_adam,
    "export of a registered model": lambda mp: _registered_model_export(),
    "stuck step": lambda mp: _stuck_step(),
    "stuck step of a worker": lambda mp: _stuck_step_of_a_worker(),
    "NCCL not loadable": _nccl_not_loadable,
    "seed outside NumPy's range": lambda mp: Params(tf_random_seed=-1),
    "integer beyond int64": lambda mp: Params(num_batches=2 ** 63),
    "state file naming deleted files": lambda mp: (
        mp.chdir(__import__("tempfile").mkdtemp()),
        __import__("towertrain.state.checkpoint", fromlist=["x"]).check_matches(
            "run/ckpt-5", {})),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_errors_page_says_what_the_code_says(monkeypatch, case):
    if case == "num_gpus without device" and devices.num_physical_gpus():
        pytest.skip("this machine has a GPU")
    if case == "unwritable" and not os.path.isfile("/etc/hostname"):
        pytest.skip("no /etc/hostname file here")
    with pytest.raises(Exception) as raised:
        CASES[case](monkeypatch)
    assert f"`{raised.value}`" in _section(), str(raised.value)


def test_every_row_of_the_table_is_checked():
    rows = [line for line in _section().splitlines()
            if line.startswith("| ") and not line.startswith("| what")]
    assert len(rows) == len(CASES)
    assert all(re.search(r"`[^`]+` *\|$", row) or "(an unwritable" in row for row in rows)
