"""Staging x every input door (docs/data.md: staging works in front of any input):
--data_dir with --input=dataset and --input=queue, from_arrays and a user's
tf.data dataset. With --staging_depth=2 each door trains on exactly the
batches, in the order, it gives without staging, and two batches really wait
in every device's area between steps."""
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.input_pipeline import from_arrays, from_dataset
from helpers import cifar_files

STEPS, PER_DEVICE, DEVICES = 4, 4, 2
GLOBAL = PER_DEVICE * DEVICES


def _arrays():
    rng = np.random.default_rng(5)
    images = rng.standard_normal((5 * GLOBAL, 32, 32, 3)).astype(np.float32)
    return images, rng.integers(0, 10, 5 * GLOBAL).astype(np.int32)


def _run(door, depth, data_dir):
    kw = dict(model="trivial", device="cpu", num_gpus=DEVICES, batch_size=PER_DEVICE,
              variable_update="replicated", init_learning_rate=0.1, num_batches=STEPS,
              num_warmup_batches=0, staging_depth=depth, data_format="NHWC")
    source = None
    if door in ("dataset", "queue"):
        kw.update(data_dir=data_dir, input=door)
    elif door == "from_arrays":
        source = from_arrays(*_arrays(), GLOBAL)
    else:  # a user's own tf.data pipeline, of single examples
        source = from_dataset(tf.data.Dataset.from_tensor_slices(_arrays()).repeat(),
                              global_batch=GLOBAL)
    trainer = Trainer(Params(**kw), input_source=source)
    try:
        losses, staged = [], []
        for _ in range(STEPS):
            losses.append(trainer.step().loss)
            staged.append(trainer.staged_batches())
        weights = [v.numpy() for v in trainer.variables.primary_variables()[0]]
    finally:
        trainer.close()
    return losses, staged, weights


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return cifar_files.write_dataset(str(tmp_path_factory.mktemp("cifar")), num_train=40,
                                     num_test=8)


@pytest.mark.parametrize("door", ["dataset", "queue", "from_arrays", "from_dataset"])
def test_staging_trains_each_door_on_the_batches_it_gives_unstaged(door, data_dir):
    plain_losses, plain_staged, plain_weights = _run(door, 0, data_dir)
    losses, staged, weights = _run(door, 2, data_dir)
    assert plain_staged == [0] * STEPS
    # Two batches wait after each step until the run's end stops the puts.
    assert staged == [2, 2, 1, 0], staged
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-6)
    for got, want in zip(weights, plain_weights):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert len(set(plain_losses)) == STEPS  # the batches differ: an order change shows
