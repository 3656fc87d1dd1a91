"""The header and total say what really ran: a user's own input is
not announced as the model's default dataset, and an epoch run says how many
of its steps are timed."""
import numpy as np

from towertrain import Params, Trainer
from towertrain.input_pipeline import from_arrays

from helpers.recording import id_model

NUM_EXAMPLES, GLOBAL_BATCH = 10, 4


def _arrays():
    images = np.random.RandomState(0).rand(NUM_EXAMPLES, 2, 2, 1).astype(np.float32)
    return images, np.arange(NUM_EXAMPLES, dtype=np.int32)


def test_an_epoch_run_says_how_many_steps_are_timed_and_what_the_total_covers():
    lines = []
    trainer = Trainer(Params(device="cpu", num_gpus=2, num_epochs=2, num_warmup_batches=10,
                             init_learning_rate=0.01, staging_depth=0),
                      model=id_model(NUM_EXAMPLES),
                      input_source=from_arrays(*_arrays(), GLOBAL_BATCH, num_epochs=2))
    trainer.train(write=lines.append)
    total = 2 * -(-NUM_EXAMPLES // GLOBAL_BATCH)  # 6 steps, 5 of them warmup
    header = "\n".join(lines[:lines.index("==========")])
    assert "Num batches: 1 timed\n" in header
    assert f"of {total} steps (2 epochs; the first {total - 1} are warmup, untimed)" in header
    # The user's arrays are named, not the model's default dataset (cifar10).
    assert "Dataset:     from_arrays: 10 examples in memory (dataset" in header
    assert "cifar10" not in header
    assert (f"(the total covers the 1 timed step; the {total - 1} warmup steps before them "
            "are untimed)") in lines
