"""--num_epochs on synthetic data counts the dataset's known size, as
tf_cnn_benchmarks does: ImageNet's 1,281,167 training
examples, CIFAR-10's 50,000; the header's Epoch line says where an epoch's
length came from (the dataset's known size, the files, or the flag)."""
import math

import pytest

from towertrain import Params, Trainer

from helpers.cifar_files import write_dataset


def _epoch_of(params):
    trainer = Trainer(params)
    try:
        return trainer.plan.steps.total, dict(trainer.header_info()).get("Epoch")
    finally:
        trainer.close()


@pytest.mark.parametrize("data_name,examples", [("cifar10", 50000), ("imagenet", 1281167)])
def test_synthetic_epochs_count_the_datasets_known_size(data_name, examples):
    batch = 1000 if data_name == "cifar10" else 1
    total, epoch = _epoch_of(Params(model="trivial", device="cpu", data_name=data_name,
                                    batch_size=batch, num_epochs=2, num_warmup_batches=0))
    per_epoch = math.ceil(examples / batch)
    assert total == 2 * per_epoch
    assert epoch == (f"{examples:,} examples, {per_epoch} batches of {batch} ({data_name}'s "
                     "known training size, as tf_cnn_benchmarks; the data is synthetic)")


def test_the_epoch_line_names_the_flag_or_the_files(tmp_path):
    total, epoch = _epoch_of(Params(model="trivial", device="cpu", batch_size=10,
                                    num_epochs=1, num_examples_per_epoch=95,
                                    num_warmup_batches=0))
    assert (total, epoch) == (10, "95 examples, 10 batches of 10 (--num_examples_per_epoch)")
    data_dir = write_dataset(str(tmp_path / "cifar"), num_train=12, num_test=4)
    total, epoch = _epoch_of(Params(model="trivial", device="cpu", batch_size=4, num_epochs=1,
                                    data_dir=data_dir, num_warmup_batches=0))
    assert (total, epoch) == (3, "12 examples, 3 batches of 4 (the files in --data_dir)")


def test_no_epoch_line_without_epochs():
    assert _epoch_of(Params(model="trivial", device="cpu", num_batches=3)) == (13, None)
