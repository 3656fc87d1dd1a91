"""--batch_group_size: the staging areas get a group of batches at a time,
every group-size steps, and training sees the same batches in the same order."""
import pytest

from helpers.cifar_files import write_dataset
from towertrain import Params, Trainer
from towertrain.errors import ParamsError


def losses_and_staged(data_dir, **flags):
    params = Params(model="trivial", device="cpu", data_dir=data_dir, batch_size=2, num_batches=6, num_warmup_batches=0,
                    **flags)
    trainer = Trainer(params)
    try:
        losses, staged = [], []
        for _ in range(6):
            losses.append(trainer.step().loss)
            staged.append(trainer.staged_batches())
        return losses, staged
    finally:
        trainer.close()


def test_groups_of_batches_are_staged_every_group_steps(tmp_path):
    data_dir = write_dataset(str(tmp_path / "cifar"), num_train=40, num_test=4)
    one, staged_one = losses_and_staged(data_dir)
    grouped, staged = losses_and_staged(data_dir, batch_group_size=3)
    assert staged_one == [1, 1, 1, 1, 1, 0]  # one put per step (none after the last)
    assert staged == [2, 1, 0, 2, 1, 0]  # three put at once, then three steps take them
    assert grouped == pytest.approx(one, rel=1e-6)  # the same batches, in order


def test_batch_group_size_needs_staging():
    with pytest.raises(ParamsError, match=r"^--batch_group_size=2: needs staging"):
        Params(model="trivial", batch_group_size=2, staging_depth=0)
