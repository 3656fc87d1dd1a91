"""Checkpoint claims checked on the files themselves (docs/checkpoints.md).

- The optimizer slots are saved, keyed by variable: for momentum, adam and
  rmsprop the checkpoint lists exactly slots/<key>/<slot> for every trainable
  variable, with the values the optimizer held; restored into another mode
  (parameter_server on 1 device -> replicated on 2) every copy's slots equal
  them bit for bit.
- A damaged latest checkpoint (truncated, or bytes changed in place with the
  size kept) fails clearly and nothing in train_dir changes: every file's
  bytes are hashed before and after, so a rewrite of the same size is caught.
"""
import hashlib
import os

import numpy as np
import pytest
import tensorflow as tf

from towertrain.state.checkpoint import CheckpointError

from towertrain import Params, Trainer

SLOTS = {"momentum": ["momentum"], "adam": ["momentum", "velocity"],
         "rmsprop": ["momentum", "velocity"]}  # rmsprop with --momentum=0.9 (default)
SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


def params(train_dir, mode="parameter_server", gpus=1, optimizer="momentum", steps=3,
           **kw):
    return Params(model="trivial", device="cpu", num_gpus=gpus, variable_update=mode,
                  optimizer=optimizer, batch_size=2, num_batches=steps, num_warmup_batches=0,
                  display_every=1000, init_learning_rate=0.01, train_dir=str(train_dir), **kw)


def quiet(line):
    del line


def model_keys(trainer):
    """'trivial/hidden/kernel' -> 'hidden__kernel': the the docs' key of a variable."""
    prefix = trainer.model.name + "/"
    return [v.path[len(prefix):].replace("/", "__") for v in trainer.model.trainable_variables]


def slot_variable(optimizer, key, slot):
    """Keras names a slot '<variable name>_<slot>'; the engine's variable names end
    with the key."""
    found = [v for v in optimizer.variables
             if v.name == f"{key}_{slot}" or v.name.endswith(f"_{key}_{slot}")]
    assert len(found) == 1, (key, slot, [v.name for v in optimizer.variables])
    return found[0]


@pytest.mark.parametrize("optimizer", ["momentum", "adam", "rmsprop"])
def test_slots_are_saved_per_variable_and_restore_exactly_into_another_mode(
        tmp_path, optimizer):
    source = Trainer(params(tmp_path, optimizer=optimizer))
    source.train(write=quiet)
    path = tf.train.latest_checkpoint(str(tmp_path))
    assert path.endswith("ckpt-3")
    keys = model_keys(source)
    saved = dict(tf.train.list_variables(path))
    slot_names = sorted(name[:-len(SUFFIX)] for name in saved
                        if name.startswith("slots/") and name.endswith(SUFFIX))
    expected = sorted(f"slots/{key}/{slot}" for key in keys for slot in SLOTS[optimizer])
    assert slot_names == expected
    reader = tf.train.load_checkpoint(path)
    source_optimizer, = source.variables.optimizers()
    for key in keys:
        for slot in SLOTS[optimizer]:
            value = reader.get_tensor(f"slots/{key}/{slot}{SUFFIX}")
            assert np.any(value != 0), f"{key}/{slot} was never updated"
            np.testing.assert_array_equal(
                value, slot_variable(source_optimizer, key, slot).numpy())

    # Another mode and device count, same train_dir: restored, nothing trained.
    target = Trainer(params(tmp_path, mode="replicated", gpus=2, optimizer=optimizer))
    result = target.train(write=quiet)
    assert getattr(result, "steps", 3) == 3
    assert tf.train.latest_checkpoint(str(tmp_path)) == path
    optimizers = target.variables.optimizers()
    assert len(optimizers) == 2
    for opt in optimizers:
        assert int(opt.iterations.numpy()) == 3
        for key in keys:
            for slot in SLOTS[optimizer]:
                np.testing.assert_array_equal(
                    slot_variable(opt, key, slot).numpy(),
                    reader.get_tensor(f"slots/{key}/{slot}{SUFFIX}"),
                    err_msg=f"{key}/{slot} on copy {optimizers.index(opt)}")
    for copy in target.variables.trainable_copies():
        for key, variable in zip(keys, copy):
            np.testing.assert_array_equal(variable.numpy(),
                                          reader.get_tensor(f"model/{key}{SUFFIX}"))


def file_hashes(directory):
    return {name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
            for name in sorted(os.listdir(directory))}


def truncate(path):
    path.write_bytes(path.read_bytes()[:path.stat().st_size // 2])


def corrupt_in_place(path):
    """Same size, different bytes: a size check cannot see it."""
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 3, len(data) // 3 + 64):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [truncate, corrupt_in_place], ids=lambda f: f.__name__)
def test_damaged_latest_checkpoint_fails_and_no_byte_changes(tmp_path, damage):
    Trainer(params(tmp_path, steps=2, save_model_steps=1)).train(write=quiet)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-2")
    good = {f"model/{key}{SUFFIX}": tf.train.load_checkpoint(
        str(tmp_path / "ckpt-1")).get_tensor(f"model/{key}{SUFFIX}")
        for key in ("hidden__kernel", "logits__bias")}
    data_files = [name for name in os.listdir(tmp_path) if name.startswith("ckpt-2.data-")]
    assert len(data_files) == 1
    damage(tmp_path / data_files[0])
    before = file_hashes(tmp_path)
    with pytest.raises(CheckpointError) as failure:
        Trainer(params(tmp_path, steps=4, save_model_steps=1)).train(write=quiet)
    # Which one is damaged, why, and the earlier whole one offered.
    why = ("a data file fails its checksum: Checksum does not match"
           if damage is corrupt_in_place else "")
    assert str(failure.value).startswith(f"checkpoint {tmp_path}/ckpt-2 is damaged ({why}"), \
        str(failure.value)
    assert str(failure.value).endswith(
        f"); nothing was changed: resume from the earlier checkpoint {tmp_path}/ckpt-1, which "
        f"reads whole: the same command with --checkpoint={tmp_path}/ckpt-1, or put back a "
        "copy of its files"), str(failure.value)
    assert file_hashes(tmp_path) == before  # same files, same bytes
    reader = tf.train.load_checkpoint(str(tmp_path / "ckpt-1"))  # still intact
    for name, value in good.items():
        np.testing.assert_array_equal(reader.get_tensor(name), value)
    # The offer taken: the run resumes from ckpt-1 and saves a whole ckpt-2 over the damaged.
    lines = []
    Trainer(params(tmp_path, steps=4, save_model_steps=1,
                   checkpoint=str(tmp_path / "ckpt-1"))).train(write=lines.append)
    assert f"Resumed:     from step 1 ({tmp_path}/ckpt-1)" in lines, lines
    tf.train.load_checkpoint(str(tmp_path / "ckpt-2")).get_tensor(
        f"model/logits__bias{SUFFIX}")  # whole again


def test_a_damaged_checkpoint_offers_the_newest_earlier_one_that_reads_whole(tmp_path):
    """ckpt-1 .. ckpt-5 on disk, ckpt-5 and ckpt-4 damaged: the offer is
    ckpt-3 (neither the oldest whole one nor a damaged newer one), and with
    every earlier one damaged there is none to offer."""
    from towertrain.state import checkpoint as ckpt_lib
    for step in range(1, 6):
        tf.train.Checkpoint(v=tf.Variable(np.full(64, step, np.float32))).write(
            str(tmp_path / f"ckpt-{step}"))

    def data_file(step):
        name, = [n for n in os.listdir(tmp_path) if n.startswith(f"ckpt-{step}.data-")]
        return tmp_path / name
    corrupt_in_place(data_file(5))
    corrupt_in_place(data_file(4))
    with pytest.raises(CheckpointError) as failure:
        ckpt_lib.check_whole(str(tmp_path / "ckpt-5"))
    assert f"resume from the earlier checkpoint {tmp_path}/ckpt-3, which reads whole" in \
        str(failure.value), str(failure.value)
    for step in (1, 2, 3):
        corrupt_in_place(data_file(step))
    with pytest.raises(CheckpointError, match="no earlier checkpoint beside it reads whole"):
        ckpt_lib.check_whole(str(tmp_path / "ckpt-5"))
