"""Epoch accounting, exact uneven batches, and the staged GPU graph."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.input_pipeline import from_arrays, from_dataset
from towertrain.engine.feed.staging import StagedInput

from helpers.recording import id_model as _id_model, recording_loss as _recording_loss

NUM_EXAMPLES = 103
GLOBAL_BATCH = 16






@pytest.mark.parametrize("num_devices", [1, 2, 3, 4])
@pytest.mark.parametrize("staging_depth", [0, 1])
def test_every_example_once_per_epoch(num_devices, staging_depth):
    ids = np.arange(NUM_EXAMPLES, dtype=np.int32)
    images = np.random.RandomState(0).rand(NUM_EXAMPLES, 2, 2, 1).astype(np.float32)
    seen = []
    params = Params(device="cpu", num_gpus=num_devices, num_epochs=2,
                    num_warmup_batches=3, staging_depth=staging_depth,
                    init_learning_rate=0.01)
    trainer = Trainer(params, model=_id_model(NUM_EXAMPLES),
                      input_source=from_arrays(images, ids, GLOBAL_BATCH, shuffle=True,
                                               num_epochs=2),
                      loss_fn=_recording_loss(seen))
    steps_per_epoch = -(-NUM_EXAMPLES // GLOBAL_BATCH)
    assert trainer.num_warmup_batches + trainer.num_batches == 2 * steps_per_epoch
    epochs = []
    for _ in range(2):
        for _ in range(steps_per_epoch):
            trainer.step()
        epochs.append(sorted(seen))
        seen.clear()
    for epoch in epochs:
        assert epoch == ids.tolist()  # each id exactly once
    if staging_depth:
        assert isinstance(trainer.input, StagedInput)
        assert trainer.input.sizes() == [0] * num_devices  # drained, nothing left over
    with pytest.raises(tf.errors.OutOfRangeError):
        trainer.step()  # the data is really exhausted: nothing was held back


def test_train_runs_num_epochs_and_drains_staging():
    images = np.zeros((20, 2, 2, 1), np.float32)
    labels = np.arange(20, dtype=np.int32) % 3
    params = Params(device="cpu", num_gpus=2, num_epochs=3, num_warmup_batches=2,
                    staging_depth=2, init_learning_rate=0.01, display_every=100)
    trainer = Trainer(params, model=_id_model(3),
                      input_source=from_arrays(images, labels, 8, num_epochs=3))
    result = trainer.train(write=lambda line: None)
    assert result.steps == 3 * 3  # ceil(20 / 8) steps per epoch
    assert trainer.input.sizes() == [0, 0]


def test_num_epochs_needs_finite_data():
    # An input without a length (synthetic data counts its dataset's known
    # size instead: tests/plan/test_synthetic_epochs.py).
    endless = from_dataset(tf.data.Dataset.from_tensors(
        (np.zeros((32, 32, 3), np.float32), 0)).repeat(), 2)
    with pytest.raises(ValueError, match="--num_epochs=1: needs the epoch length"):
        Trainer(Params(device="cpu", num_gpus=1, num_epochs=1, batch_size=2),
                input_source=endless)


def _conv_model(data_format="channels_last"):
    return keras.Sequential([
        keras.Input((4, 4, 2)),
        keras.layers.Conv2D(3, 3, padding="same", activation="relu",
                            data_format=data_format),
        keras.layers.Flatten(), keras.layers.Dense(5)])


def _serial_step(model, weights, images, labels, lr):
    """Plain Keras: one SGD step on the whole batch with the mean loss."""
    for v, w in zip(model.trainable_variables, weights):
        v.assign(w)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
            labels, model(images, training=True), from_logits=True))
    grads = tape.gradient(loss, model.trainable_variables)
    return [w - lr * g.numpy() for w, g in zip(weights, grads)]


@pytest.mark.parametrize("batch", [7, 3])
@pytest.mark.parametrize("variable_update,staging_depth",
                         [("replicated", 1), ("parameter_server", 0)])
def test_tiny_final_batch_equals_serial(batch, variable_update, staging_depth):
    rng = np.random.RandomState(batch)
    images = rng.randn(batch, 4, 4, 2).astype(np.float32)
    labels = rng.randint(0, 5, batch).astype(np.int32)
    keras.utils.set_random_seed(3)
    model = _conv_model()
    initial = [v.numpy() for v in model.trainable_variables]
    lr = 0.1
    # One epoch of `batch` examples with global batch 16: a single, partial,
    # dynamically shaped batch split 2,2,2,1 (7) or 1,1,1,0 (3).
    params = Params(device="cpu", num_gpus=4, num_epochs=1, num_warmup_batches=0,
                    variable_update=variable_update, staging_depth=staging_depth,
                    init_learning_rate=lr, tf_random_seed=3)
    trainer = Trainer(params, model=model,
                      input_source=from_arrays(images, labels, 16, num_epochs=1))
    trainer.step()
    expected = _serial_step(_conv_model(), initial, images, labels, lr)
    for copy in trainer.variables.trainable_copies():
        for got, want in zip(copy, expected):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-7)


def test_empty_tower_keeps_batch_norm_statistics_finite():
    model = keras.Sequential([keras.Input((4, 4, 2)), keras.layers.Conv2D(3, 3),
                              keras.layers.BatchNormalization(), keras.layers.Flatten(),
                              keras.layers.Dense(5)])
    images = np.random.RandomState(0).randn(3, 4, 4, 2).astype(np.float32)
    params = Params(device="cpu", num_gpus=4, num_epochs=1, num_warmup_batches=0,
                    variable_update="replicated", init_learning_rate=0.1)
    trainer = Trainer(params, model=model, input_source=from_arrays(
        images, np.array([0, 1, 2], np.int32), 16, num_epochs=1))
    assert np.isfinite(float(trainer.step()))
    for copy in trainer.variables.trainable_copies() + trainer.variables.non_trainable_copies():
        for v in copy:
            assert np.all(np.isfinite(v.numpy())), v.name


def test_gpu_graph_has_stage_pair_per_gpu_and_sliced_inputs():
    num_gpus, per_device = 4, 2
    images = np.zeros((16, 3, 32, 32), np.float32)  # NCHW, the GPU default
    labels = np.zeros(16, np.int32)
    params = Params(device="gpu", num_gpus=num_gpus, batch_size=per_device,
                    model="trivial", data_name="cifar10", variable_update="parameter_server",
                    local_parameter_device="cpu")  # no eager op on a GPU that is absent
    trainer = Trainer(params, input_source=from_arrays(images, labels, per_device * num_gpus),
                      check_devices=False)
    graph = trainer.trace_step().graph
    for kind in ("Stage", "Unstage"):
        ops = [op for op in graph.get_operations() if op.type == kind]
        assert sorted(op.device for op in ops) == [
            f"/device:GPU:{i}" for i in range(num_gpus)], kind
    for op in graph.get_operations():
        if op.type == "Stage":
            assert op.inputs[0].shape[0] == per_device  # the slice, never the global batch
        if op.type == "Unstage":
            assert op.outputs[0].shape[0] == per_device
            assert op.outputs[0].shape[1:] == (3, 32, 32)
    trainer.close()
