"""--input=queue: a FIFOQueue filled by Python threads."""
import keras
import numpy as np
import pytest

from towertrain import Params, Trainer
from towertrain.input_pipeline.arrays import InputError
from towertrain.input_pipeline.queue_input import QueueInput

from helpers.data_files import write_cifar as _write_cifar
from helpers.recording import id_model as _id_model, recording_loss as _recording_loss


def _id_source(count, fail_at=None):
    def source(epoch):
        order = np.random.RandomState(epoch).permutation(count)
        for n, i in enumerate(order):
            if fail_at is not None and n == fail_at:
                raise ValueError(f"source broke at example {n}")
            yield np.full((2, 2, 1), i, np.float32), i
    return source


@pytest.mark.parametrize("staging_depth", [0, 1])
def test_queue_trains_every_example_once_per_epoch(staging_depth):
    seen = []
    source = QueueInput(_id_source(103), (2, 2, 1), 16, num_examples=103, num_epochs=2,
                        num_threads=3)
    params = Params(device="cpu", num_gpus=3, num_epochs=2, num_warmup_batches=0,
                    staging_depth=staging_depth, init_learning_rate=0.01)
    trainer = Trainer(params, model=_id_model(103), input_source=source,
                      loss_fn=_recording_loss(seen))
    assert trainer.num_batches == 14
    for _ in range(2):
        for _ in range(7):
            trainer.step()
        assert sorted(seen) == list(range(103))
        seen.clear()
    trainer.close()


def test_queue_feeder_failure_is_reported_not_hung():
    source = QueueInput(_id_source(40, fail_at=20), (2, 2, 1), 8, num_examples=40,
                        num_epochs=1, description="test source")
    params = Params(device="cpu", num_gpus=2, num_epochs=1, num_warmup_batches=0,
                    staging_depth=0, init_learning_rate=0.01)
    trainer = Trainer(params, model=_id_model(40), input_source=source)
    with pytest.raises(InputError, match="test source: feeder thread failed: source broke"):
        for _ in range(5):
            trainer.step()


def test_queue_input_on_cifar_files(tmp_path):
    _write_cifar(tmp_path / "data_batch_1.bin", np.arange(10) % 10)
    keras.utils.set_random_seed(0)
    params = Params(model="trivial", data_dir=str(tmp_path), data_name="cifar10",
                    input="queue", device="cpu", num_gpus=2, batch_size=3, num_epochs=1,
                    num_warmup_batches=0, display_every=100)
    trainer = Trainer(params)
    result = trainer.train(write=lambda line: None)
    assert result.steps == 2 and np.isfinite(result.final_loss)  # 6 + a partial 4
