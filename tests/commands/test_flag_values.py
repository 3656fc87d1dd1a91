"""A flag's value reaches the code that uses it: for flags no other test sets
to a non-default value, the value here changes the outcome the way the docs
says (docs/flag_tests.md names the test for every flag). Quick: tiny models,
Trainer construction, one short run."""
import numpy as np
import pytest

from towertrain import Params, Trainer, models
from towertrain.callbacks import Callback

import helpers.tiny_models  # noqa: F401 - registers ckpt_tiny

TRIVIAL = dict(model="trivial", device="cpu")


# --minimum_learning_rate with --scale_learning_rate: the floor is absolute.

@pytest.mark.parametrize("decay", [
    dict(num_epochs_per_decay=1, learning_rate_decay_factor=0.1),
    dict(learning_rate_schedule="cosine")])
def test_minimum_learning_rate_is_not_scaled_with_linear_scaling(decay):
    # 2 devices x 4 = 8 global over base 2: every rate x4, 0.1 -> 0.4. One step
    # an epoch, 6 steps: the staircase gives 0.4, 0.04, 0.004, then the floor.
    params = Params(**TRIVIAL, num_gpus=2, batch_size=4, variable_update="replicated",
                    init_learning_rate=0.1, scale_learning_rate="linear", base_batch_size=2,
                    num_examples_per_epoch=8, num_batches=6, num_warmup_batches=0,
                    minimum_learning_rate=0.003, **decay)
    trainer = Trainer(params)
    schedule = trainer.learning_rate
    assert schedule.value_at(0) == pytest.approx(0.4)
    assert schedule.value_at(6) == pytest.approx(0.003)  # not 0.003 x 4
    assert schedule.value_at(100) == pytest.approx(0.003)
    for optimizer in trainer.variables.optimizers():  # what the updates read
        assert optimizer._learning_rate is schedule


# --model, --data_name, --data_format, --tf_random_seed: what is built.

def test_model_data_name_and_data_format_choose_the_network_and_its_shape():
    built = Trainer(Params(model="ckpt_tiny", device="cpu", data_name="imagenet",
                           data_format="NCHW")).model
    assert built.name == "ckpt_tiny"
    assert built.output_shape[-1] == models.DATASET_CLASSES["imagenet"]  # not cifar10's 10
    assert built.input_shape[1] == 3 and built.input_shape[2] == built.input_shape[3] == 8


def test_tf_random_seed_sets_the_initial_weights():
    def initial(seed):
        trainer = Trainer(Params(**TRIVIAL, tf_random_seed=seed))
        return [v.numpy() for v in trainer.variables.primary_variables()[0]]
    first, again, other = initial(7), initial(7), initial(8)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(first, other))


# --batch_size, --num_batches, --num_warmup_batches, --display_every: one run.

class Examples(Callback):
    def __init__(self):
        self.seen = []

    def after_step(self, step, result, seconds):
        self.seen.append((step, result.examples))


def test_batch_steps_warmup_and_display_every_shape_the_run():
    params = Params(**TRIVIAL, num_gpus=2, batch_size=3, variable_update="replicated",
                    num_batches=4, num_warmup_batches=2, display_every=2)
    examples = Examples()
    lines = []
    result = Trainer(params).train(write=lines.append, callbacks=[examples])
    assert result.steps == 6  # warmup + timed
    assert examples.seen == [(step, 6) for step in range(1, 7)]  # 2 devices x 3
    assert "Batch size:  6 global" in lines
    assert lines.index("Done warm up") > lines.index("Running warm up")
    step_lines = [int(line.split("\t")[0]) for line in lines if line[:1].isdigit()]
    assert step_lines == [3, 4, 6]  # the first timed step, then every 2nd global step
