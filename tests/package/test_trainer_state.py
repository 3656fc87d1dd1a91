"""A Trainer refuses, in one line, what its state rules out: train() with
every planned step trained (it returned final_loss=nan and no word), and
step() or train() after close()."""
import keras
import numpy as np
import pytest

import towertrain
from towertrain.errors import TrainerStateError


def trainer():
    model = keras.Sequential([keras.Input((2, 2, 1)), keras.layers.Flatten(),
                              keras.layers.Dense(2)], name="mine")
    images = np.linspace(0, 1, 32, dtype=np.float32).reshape(8, 2, 2, 1)
    params = towertrain.Params(device="cpu", num_gpus=2, num_warmup_batches=0, num_batches=2,
                               init_learning_rate=0.1)
    return towertrain.Trainer(params, model=model,
                              input_source=towertrain.from_arrays(images, np.arange(8) % 2, 4))


NOTHING_LEFT = (
    "trainer.train(): this Trainer has trained all 2 planned steps (global step 2), so there "
    "is nothing left to train; to train further, give Params a larger num_batches (or "
    "num_epochs) in a new Trainer (with train_dir= it resumes from the checkpoint; without, "
    "trainer.save(path) then new_trainer.restore(path))")


def test_train_twice_says_there_is_nothing_left_to_train():
    run = trainer()
    result = run.train(write=lambda line: None)
    assert (result.steps, np.isfinite(result.final_loss)) == (2, True)
    with pytest.raises(TrainerStateError) as refused:
        run.train(write=lambda line: None)
    assert str(refused.value) == NOTHING_LEFT
    assert run.global_step() == 2
    run.close()


def test_train_after_steps_that_reached_the_end_is_refused_and_before_it_trains_the_rest():
    run = trainer()
    run.step()
    result = run.train(write=lambda line: None)  # the step left
    assert run.global_step() == 2 and np.isfinite(result.final_loss)
    run.close()
    ended = trainer()
    ended.step()
    ended.step()
    with pytest.raises(TrainerStateError, match="nothing left to train"):
        ended.train(write=lambda line: None)
    ended.close()


def test_step_and_train_after_close_are_refused():
    run = trainer()
    run.step()
    run.close()
    run.close()  # still safe twice
    with pytest.raises(TrainerStateError) as refused:
        run.step()
    assert str(refused.value) == (
        "trainer.step(): this Trainer is closed (close() stopped its input and released its "
        "devices); make a new Trainer to train on (trainer.save(path) before close() and "
        "trainer.restore(path) after keep the weights)")
    with pytest.raises(TrainerStateError, match=r"^trainer.train\(\): this Trainer is closed"):
        run.train(write=lambda line: None)
    assert run.global_step() == 1
