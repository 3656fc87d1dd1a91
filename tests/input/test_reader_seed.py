"""docs: the readers take their shuffle and augmentation seeds from
--tf_random_seed. Through the Trainer (the door a run uses): its input's first
batches are the reader's own with that seed, and another seed reorders them."""
import numpy as np
import pytest

from towertrain import Params, Trainer
from towertrain.input_pipeline import cifar10

from helpers.cifar_files import write_dataset


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return write_dataset(str(tmp_path_factory.mktemp("cifar")), num_train=40, num_test=8)


def _first_batches(trainer, count=2):
    source = trainer.input
    while not hasattr(source, "dataset"):  # under staging
        source = source.inner
    batches = iter(source.dataset)
    return [tuple(np.asarray(part) for part in next(batches)) for _ in range(count)]


def _trainer_batches(data_dir, seed, distortions):
    trainer = Trainer(Params(model="trivial", device="cpu", data_dir=data_dir, batch_size=8,
                             tf_random_seed=seed, distortions=distortions, num_batches=1))
    try:
        return _first_batches(trainer)
    finally:
        trainer.close()


def _reader_batches(data_dir, seed, distortions):
    source = cifar10.dataset_input(data_dir, global_batch=8, seed=seed,
                                   distortions=distortions)
    batches = iter(source.dataset)
    return [tuple(np.asarray(part) for part in next(batches)) for _ in range(2)]


def test_the_reader_runs_with_tf_random_seed(data_dir):
    """With distortions, so both the shuffle and the crops and flips are seeded."""
    ran = {seed: _trainer_batches(data_dir, seed, True) for seed in (5, 11)}
    for seed, batches in ran.items():
        for (images, labels), (want_images, want_labels) in zip(
                batches, _reader_batches(data_dir, seed, True)):
            np.testing.assert_array_equal(labels, want_labels)
            np.testing.assert_array_equal(images, want_images)
    assert not np.array_equal(ran[5][0][0], ran[11][0][0])
