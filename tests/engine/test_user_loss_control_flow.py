"""A user's loss_fn may branch on tensors in Python: the engine traces its own
step without AutoGraph, but converts the user's loss, as a tf.function would.
Trained with such a loss, the weights equal those of the same loss written
with tf.where; the forward-only benchmark takes it too. The engine's own
step and evaluation are traced without AutoGraph."""
import keras
import numpy as np
import tensorflow as tf

import towertrain
from towertrain.engine.evaluation import inference

LR, STEPS, BATCH = 0.1, 4, 4


def data():
    rng = np.random.default_rng(3)
    images = rng.standard_normal((STEPS * BATCH, 6)).astype(np.float32)
    # Steps 1 and 3 hold a label 2, steps 2 and 4 none: both branches are taken.
    labels = np.array([0, 1, 2, 0, 1, 0, 1, 0, 2, 2, 0, 1, 0, 0, 1, 1], np.int64)
    return images, labels


def model():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(3, name="logits")],
                            name="branching")


def _cross_entropy(labels, outputs):
    return keras.losses.sparse_categorical_crossentropy(labels, outputs, from_logits=True)


def python_branch_loss(labels, outputs):
    """A batch holding class 2 weighs its loss 3x: a Python `if` on a tensor."""
    if tf.reduce_any(tf.equal(labels, 2)):
        return 3.0 * _cross_entropy(labels, outputs)
    return _cross_entropy(labels, outputs)


def graph_branch_loss(labels, outputs):
    weight = tf.where(tf.reduce_any(tf.equal(labels, 2)), 3.0, 1.0)
    return weight * _cross_entropy(labels, outputs)


def _trainer(loss_fn, **params):
    images, labels = data()
    options = dict(device="cpu", num_gpus=2, init_learning_rate=LR, num_warmup_batches=0,
                   num_batches=STEPS, variable_update="replicated")
    options.update(params)
    return towertrain.Trainer(towertrain.Params(**options), model=model(),
                              input_source=towertrain.from_arrays(images, labels, BATCH),
                              loss_fn=loss_fn)


def _trained(loss_fn):
    run = _trainer(loss_fn)
    losses = [float(run.step()) for _ in range(STEPS)]
    run.sync_model()
    weights = run.model.get_weights()
    run.close()
    return losses, weights


def test_a_loss_branching_in_python_on_tensors_trains_as_its_graph_form():
    losses, weights = _trained(python_branch_loss)
    want_losses, want_weights = _trained(graph_branch_loss)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-6)
    for got, want in zip(weights, want_weights):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # The branch mattered: the plain cross-entropy trains other weights.
    plain_losses, _ = _trained(_cross_entropy)
    assert not np.allclose(losses, plain_losses)


def test_the_forward_only_benchmark_takes_a_loss_branching_in_python():
    reported = []
    for loss_fn in (python_branch_loss, graph_branch_loss):
        # No staging and a line per step, as the CLI's --forward_only runs it.
        run = _trainer(loss_fn, staging_depth=0, display_every=1)
        lines = []
        inference.run(run.plan, run.model, run.devices, run.variables, run.feed, run.loss_fn,
                      write=lines.append)
        run.close()
        reported.append([line.split("\t")[2] for line in lines if line[:1].isdigit()])
    assert len(reported[0]) == STEPS and reported[0] == reported[1]


def _spy_on_autograph(monkeypatch):
    """The functions AutoGraph is asked to convert from now on (its every
    conversion, cached or not, passes through converted_call)."""
    from tensorflow.python.autograph.impl import api
    converted, real = [], api.converted_call

    def spy(f, *args, **kwargs):
        converted.append((getattr(f, "__module__", None), getattr(f, "__qualname__", repr(f))))
        return real(f, *args, **kwargs)
    monkeypatch.setattr(api, "converted_call", spy)
    return converted


def test_the_engine_traces_its_own_step_and_eval_without_autograph(monkeypatch):
    """AutoGraph's source conversion of the engine's code cost each process
    about 2 s of start-up, and nothing in it branches on tensors in Python:
    the step and the evaluation are traced as written. Only the up-front
    check of the model's outputs keeps it (its error text depends on it);
    tf.data converts the input's map functions, as it does for any user."""
    converted = _spy_on_autograph(monkeypatch)
    tf.function(lambda x: x + 1)(tf.constant(1))  # the spy sees a converted function
    assert converted, "the spy missed AutoGraph"
    converted.clear()
    run = _trainer(None)  # traces its step (the staged variants) here
    try:
        run.step()
        run.evaluate(towertrain.EvalData(
            tf.data.Dataset.from_tensor_slices(data()).batch(2 * BATCH), STEPS * BATCH, "arrays",
            2 * BATCH))
    finally:
        run.close()
    engine = [(module, name) for module, name in converted
              if (module or "").startswith("towertrain.engine")]
    assert [module for module, _ in engine] == ["towertrain.engine.contract.up_front"], engine
