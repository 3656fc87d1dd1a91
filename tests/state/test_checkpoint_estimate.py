"""The free space a run asks of its train_dir's disk before the first step
(state/resume/checkpointer.py, Checkpointer.bytes_needed) against the bytes the
checkpoint it then writes takes: never less (a disk with exactly that much
free would fail at the save and lose the run), optimizer slots, index
entries and object graph included, and not more than its stated margins."""
import os

import keras
import tensorflow as tf

from towertrain import Params, Trainer, models
from towertrain.state import checkpoint as ckpt_lib
from towertrain.state.resume import checkpointer as checkpointer_lib

import helpers.cli

SMALL_LAYERS = 40


def build_wide_and_deep(num_classes, data_format, image_size):
    """One wide kernel (its momentum slot alone is 384 KiB) and many small
    layers (each tensor's index entry and object-graph node count)."""
    layers = [keras.Input(models.input_shape(image_size, data_format)),
              keras.layers.Flatten(data_format=data_format, name="flatten"),
              keras.layers.Dense(512, name="wide")]
    layers += [keras.layers.Dense(8, name=f"small_{i}") for i in range(SMALL_LAYERS)]
    layers.append(keras.layers.Dense(num_classes, name="logits"))
    return keras.Sequential(layers, name="wide_and_deep")


models.register_model("wide_and_deep", build_wide_and_deep, default_image_size=8,
                      default_batch_size=2, default_learning_rate=0.01,
                      default_dataset="cifar10", overwrite=True)


def _train_asking(tmp_path, monkeypatch, model, **params):
    """Trains one step into tmp_path/run; returns (the bytes the run asked the
    disk for, its train_dir)."""
    asked = []
    check = ckpt_lib.check_free_space

    def recording(train_dir, needed, free):
        asked.append(needed)
        return check(train_dir, needed, free)
    monkeypatch.setattr(ckpt_lib, "check_free_space", recording)
    train_dir = str(tmp_path / "run")
    trainer = Trainer(Params(model=model, device="cpu", num_batches=1, num_warmup_batches=0,
                             display_every=100, train_dir=train_dir, **params))
    try:
        trainer.train(write=helpers.cli.quiet)
    finally:
        trainer.close()
    [needed] = asked
    return needed, train_dir


def test_the_space_asked_before_training_holds_the_checkpoint_written(tmp_path, monkeypatch):
    needed, train_dir = _train_asking(tmp_path, monkeypatch, "wide_and_deep",
                                      optimizer="momentum")
    written = {name: os.path.getsize(os.path.join(train_dir, name))
               for name in os.listdir(train_dir) if not name.startswith(".")}
    assert sorted(written) == ["checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index",
                               "towertrain_run.json"]
    names = tf.train.load_checkpoint(os.path.join(train_dir, "ckpt-1")
                                     ).get_variable_to_shape_map()
    # Kernel and bias of each Dense layer, and the momentum slot of each.
    assert sum(1 for n in names if n.startswith("model/")) == 2 * (SMALL_LAYERS + 2)
    assert sum(1 for n in names if n.startswith("slots/")) == 2 * (SMALL_LAYERS + 2)
    assert needed >= sum(written.values()), (needed, written)
    # The margins: per saved tensor and the fixed files' room, no more.
    margin = checkpointer_lib.PER_TENSOR_BYTES * len(names) + checkpointer_lib.FILE_OVERHEAD_BYTES
    assert needed <= written["ckpt-1.data-00000-of-00001"] + margin, (needed, written)


def test_a_small_models_space_asked_holds_the_disk_blocks_its_files_take(tmp_path, monkeypatch):
    """A model of few tensors: the files' room (a 4 KiB block at least each,
    the common file-system block) is most of what a checkpoint takes on disk."""
    needed, train_dir = _train_asking(tmp_path, monkeypatch, "trivial", batch_size=2)
    block = 4096
    on_disk = {name: -(-os.path.getsize(os.path.join(train_dir, name)) // block) * block
               for name in os.listdir(train_dir) if not name.startswith(".")}
    assert len(on_disk) == 4, on_disk
    assert needed >= sum(on_disk.values()), (needed, on_disk)
