"""Library epochs: Params(num_epochs) and an input's num_epochs are decided in
one place (the Trainer), mismatches refused up front naming both, and an
in-memory input knows its length."""
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.errors import InputError, ParamsError
from towertrain.input_pipeline import from_arrays, from_dataset, from_generator

from helpers.recording import id_model, recording_loss

NUM_EXAMPLES, GLOBAL_BATCH = 10, 4


def _arrays():
    images = np.random.RandomState(0).rand(NUM_EXAMPLES, 2, 2, 1).astype(np.float32)
    return images, np.arange(NUM_EXAMPLES, dtype=np.int32)


def _params(**kw):
    return Params(device="cpu", num_gpus=2, init_learning_rate=0.01, display_every=100,
                  staging_depth=0, **kw)


def test_input_epochs_with_params_at_its_default_is_refused_before_any_step():
    # Was: 110 steps planned on 6 steps of data, then OUT_OF_RANGE mid-run.
    with pytest.raises(ParamsError, match=r"from_arrays, num_epochs=2\) ends after 6 steps.*"
                                          r"Params\(num_epochs=2\)"):
        Trainer(_params(), model=id_model(NUM_EXAMPLES),
                input_source=from_arrays(*_arrays(), GLOBAL_BATCH, num_epochs=2))


def test_params_and_input_epochs_that_differ_are_refused_naming_both():
    with pytest.raises(ParamsError, match=r"Params\(num_epochs=2\) and "
                                          r"from_arrays\(num_epochs=1\) disagree"):
        Trainer(_params(num_epochs=2), model=id_model(NUM_EXAMPLES),
                input_source=from_arrays(*_arrays(), GLOBAL_BATCH, num_epochs=1))


def test_params_epochs_over_an_endless_in_memory_input_train_exact_epochs():
    # Was refused: "this input has none", although the arrays' length is known.
    seen = []
    trainer = Trainer(_params(num_epochs=2, num_warmup_batches=1),
                      model=id_model(NUM_EXAMPLES),
                      input_source=from_arrays(*_arrays(), GLOBAL_BATCH, shuffle=True),
                      loss_fn=recording_loss(seen))
    per_epoch = -(-NUM_EXAMPLES // GLOBAL_BATCH)  # the last batch of an epoch is partial
    assert trainer.total_steps == 2 * per_epoch
    result = trainer.train(write=lambda line: None)
    assert result.steps == 2 * per_epoch
    assert sorted(seen) == sorted(list(range(NUM_EXAMPLES)) * 2)  # each id once per epoch


def test_a_finite_input_that_lasts_the_run_still_trains():
    trainer = Trainer(_params(num_batches=4, num_warmup_batches=1),
                      model=id_model(NUM_EXAMPLES),
                      input_source=from_arrays(*_arrays(), GLOBAL_BATCH, num_epochs=2))
    assert trainer.train(write=lambda line: None).steps == 5


@pytest.mark.parametrize("door", [
    lambda b: from_arrays(*_arrays(), b),
    lambda b: from_generator(lambda: iter(()), None, b),
    lambda b: from_dataset(tf.data.Dataset.from_tensor_slices(_arrays()), global_batch=b),
])
@pytest.mark.parametrize("bad", [0, -3, 2.5, "4"])
def test_a_bad_global_batch_is_refused_where_it_is_given(door, bad):
    with pytest.raises(InputError, match=rf"global_batch={bad!r}: must be a positive integer"):
        door(bad)
