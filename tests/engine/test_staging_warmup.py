"""A staged run builds its drain step (the step function's put=False variant,
used before a fence and at the run's end) in warmup, not in a timed step.

Its first call makes TensorFlow optimize the graph and create its kernels
(~2 s for resnet20 on 2 CPU devices): in the run's last step it understated
the total images/sec of every staged run. With 2 or more warmup steps a fence
after the first one makes that call there (engine/feed/position.py)."""
import keras
import numpy as np

from towertrain import Params, Trainer
from towertrain.input_pipeline import from_arrays

IMAGE_SHAPE = (4, 4, 3)
GLOBAL_BATCH = 8


def _model():
    """Batch norm and dropout: what an equal-weights claim must cover (the
    per-step dropout draws and the moving statistics)."""
    keras.utils.set_random_seed(3)
    return keras.Sequential([keras.Input(IMAGE_SHAPE), keras.layers.Flatten(),
                             keras.layers.Dense(8), keras.layers.BatchNormalization(),
                             keras.layers.Dropout(0.5),
                             keras.layers.Dense(5, name="logits")], name="staging_warmup")


def _train(warmup, timed, staging_depth=1, **more):
    """The trained weights and each step's (put, outputs, phase) call."""
    rng = np.random.default_rng(0)
    images = rng.standard_normal((16 * GLOBAL_BATCH,) + IMAGE_SHAPE).astype(np.float32)
    labels = rng.integers(0, 5, 16 * GLOBAL_BATCH).astype(np.int32)
    params = Params(device="cpu", num_gpus=2, variable_update="replicated",
                    staging_depth=staging_depth, num_warmup_batches=warmup,
                    num_batches=timed, print_training_accuracy=False, **more)
    trainer = Trainer(params, model=_model(),
                      input_source=from_arrays(images, labels, GLOBAL_BATCH))
    calls, step_fn = [], trainer._step_fn

    def recording(*args):
        calls.append(args)
        return step_fn(*args)

    trainer._step_fn = recording
    trainer.train()
    return [w.numpy() for w in trainer.model.weights], calls


def _first_calls(calls):
    """Step index (0-based) of each variant's first call."""
    first = {}
    for index, variant in enumerate(calls):
        first.setdefault(variant, index)
    return first


def test_every_variant_is_first_called_in_warmup():
    _, calls = _train(warmup=2, timed=5)
    assert [put for put, *_ in calls] == [False, True, True, True, True, True, False]
    assert max(_first_calls(calls).values()) < 2  # both variants built in warmup


def test_one_warmup_step_leaves_the_drain_to_the_end():
    # Not enough warmup to fence and re-stage before timing starts: unchanged.
    _, calls = _train(warmup=1, timed=4)
    assert [put for put, *_ in calls] == [True, True, True, True, False]


def test_the_warmup_fence_trains_on_the_same_batches():
    fenced, _ = _train(warmup=2, timed=5)
    unstaged, calls = _train(warmup=2, timed=5, staging_depth=0)
    assert len(calls) == 7
    for a, b in zip(fenced, unstaged):
        np.testing.assert_array_equal(a, b)


def _summaries(tmp_path, every):
    return dict(train_dir=str(tmp_path), summary_verbosity=1, save_summaries_steps=every)


def test_summary_steps_variants_are_built_in_warmup_too(tmp_path):
    # Summaries every 3 steps of 9: timed summary steps 6 (stages) and 9 (the
    # last, drains) need the gradient-norm variants; warm-up builds them.
    # Warm-up step 3 writes one itself, so step 2 builds the plain variant.
    _, calls = _train(warmup=3, timed=6, **_summaries(tmp_path / "a", 3))
    assert max(_first_calls(calls).values()) < 3
    assert [(put, outputs) for put, outputs, *_ in calls][:3] == [(False, 1), (True, 0),
                                                                  (True, 1)]
    # Summaries every 4 of 12: none in warm-up; step 2 runs plain, step 3
    # asks for the outputs.
    _, calls = _train(warmup=3, timed=9, **_summaries(tmp_path / "c", 4))
    assert max(_first_calls(calls).values()) < 3
    assert [(put, outputs) for put, outputs, *_ in calls][:3] == [(False, 1), (True, 0),
                                                                  (True, 1)]
    # A last step that writes no summary drains with the plain variant.
    _, calls = _train(warmup=3, timed=7, **_summaries(tmp_path / "b", 3))
    assert calls[0][:2] == (False, 0) and calls[-1][:2] == (False, 0)
    assert max(_first_calls(calls).values()) < 3


def test_unstaged_summary_runs_build_both_variants_in_warmup(tmp_path):
    # No staging, so no drains: warm-up step 2 writes a summary (outputs), and
    # step 1 builds the plain variant; it used to ask for the outputs too (for
    # a drain that never comes), leaving the plain one to timed step 3.
    _, calls = _train(warmup=2, timed=8, staging_depth=0, **_summaries(tmp_path / "a", 2))
    assert [(put, outputs) for put, outputs, *_ in calls][:2] == [(True, 0), (True, 1)]
    assert max(_first_calls(calls).values()) < 2
    # Summaries every 5: step 1 plain, step 2 asks for the outputs.
    _, calls = _train(warmup=2, timed=8, staging_depth=0, **_summaries(tmp_path / "b", 5))
    assert [(put, outputs) for put, outputs, *_ in calls][:2] == [(True, 0), (True, 1)]
    assert max(_first_calls(calls).values()) < 2


def test_summaries_prebuilding_in_warmup_changes_no_update(tmp_path):
    with_summaries, _ = _train(warmup=3, timed=6, **_summaries(tmp_path, 3))
    without, _ = _train(warmup=3, timed=6)
    for a, b in zip(with_summaries, without):
        np.testing.assert_array_equal(a, b)
