"""--gradient_accumulation_steps: a run stopped mid-epoch (the signal path:
loop.request_stop, staged batches drained to an update's end) and resumed
equals an uninterrupted one, batch-norm statistics and optimizer slots
included; a killed run resumed from its last checkpoint trains every example
once per epoch, with the queue input and with staging."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.callbacks import Callback
from towertrain.input_pipeline import from_arrays
from towertrain.input_pipeline.queue_input import QueueInput

from helpers import tiny_models
from helpers.checkpoint_files import latest_step


class StopAt(Callback):
    """Asks the loop to stop after `step`, as StopOnSignal does on SIGTERM."""

    def __init__(self, step):
        self.step = step

    def after_step(self, step, result, seconds):
        if step == self.step:
            self.loop.request_stop("SIGTERM")


def make_trainer(train_dir):
    tf.random.set_seed(1)  # the shuffle's seed pair includes the global seed
    rng = np.random.default_rng(3)
    images = rng.standard_normal((22, 8, 8, 3)).astype(np.float32)
    labels = rng.integers(0, 10, 22).astype(np.int32)
    # 22 examples in batches of 4: 6 an epoch (the last of 2); K=2: 3 updates an
    # epoch. Two batches staged ahead: a stop must drain to an update's end.
    params = tiny_models.tiny_params("replicated", 2, train_dir=train_dir, num_batches=None,
                                     num_epochs=3, batch_size=2, staging_depth=2,
                                     gradient_accumulation_steps=2)
    return Trainer(params, input_source=from_arrays(images, labels, 4, shuffle=True, seed=5,
                                                    num_epochs=3))


def saved(trainer):
    trainable, non_trainable = trainer.variables.primary_variables()
    slots = [v for optimizer in trainer.variables.optimizers() for v in optimizer.variables]
    return [v.numpy() for v in trainable + non_trainable + slots]


def test_stop_mid_epoch_then_resume_equals_uninterrupted(tmp_path):
    whole = make_trainer(str(tmp_path / "whole"))
    whole.train(write=lambda line: None)
    assert whole.global_step() == 9

    lines = []
    stopped = make_trainer(str(tmp_path / "split"))
    stopped.train(write=lines.append, callbacks=[StopAt(4)])
    # Staged batches 9 and 10 belong to update 5: it runs, and the save follows it.
    assert stopped.global_step() == 5
    assert any(line.startswith("Received SIGTERM: saved checkpoint at step 5")
               for line in lines), lines
    stopped.close()

    lines = []
    resumed = make_trainer(str(tmp_path / "split"))
    resumed.train(write=lines.append)
    assert any(line.startswith("Resumed:") and "from step 5" in line for line in lines)
    assert resumed.global_step() == 9
    for got, expected in zip(saved(resumed), saved(whole)):
        np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)


class Recorder(Callback):
    """The example ids each update trained on, over all its micro-batches (a
    later run's record of an update replaces an earlier one); raises
    KeyboardInterrupt after `stop_at`, as a killed run stops."""

    def __init__(self, seen, stop_at=None):
        self.seen, self.stop_at, self.current = seen, stop_at, None

    def before_step(self, step):
        self.current = step
        self.seen[step] = []

    def after_step(self, step, result, seconds):
        assert result.examples == len(self.seen[step])
        if step == self.stop_at:
            raise KeyboardInterrupt(f"simulated kill after update {step}")

    def loss_fn(self):
        def record(labels):
            self.seen[self.current].extend(labels.numpy().tolist())
            return np.float32(0)

        def loss(labels, logits):
            zero = tf.py_function(record, [labels], tf.float32)
            return keras.losses.sparse_categorical_crossentropy(
                labels, logits, from_logits=True) + zero
        return loss


def queue_input(images, ids, global_batch, epochs):
    """--input=queue's kind of source (position not in checkpoints: resume
    skips to the update's first batch)."""
    def source(epoch):
        for i in np.random.RandomState(epoch).permutation(len(ids)):
            yield images[i], ids[i]
    return QueueInput(source, images.shape[1:], global_batch, num_examples=len(ids),
                      num_epochs=epochs)


@pytest.mark.parametrize("input_kind,staging_depth", [("queue", 1), ("arrays", 3)])
def test_every_example_once_per_epoch_across_a_kill(tmp_path, input_kind, staging_depth):
    # 37 examples in batches of 8: 5 an epoch, the last of 5; K=2: updates of
    # 2, 2 and 1 batches (16, 16, 5 examples), 3 an epoch, 9 in all.
    num_examples, global_batch, epochs = 37, 8, 3
    ids = np.arange(num_examples, dtype=np.int32)
    images = np.random.RandomState(0).rand(num_examples, 2, 2, 1).astype(np.float32)
    seen = {}

    def run(stop):
        recorder = Recorder(seen, stop)
        params = Params(device="cpu", num_gpus=2, num_epochs=epochs, num_warmup_batches=1,
                        staging_depth=staging_depth, init_learning_rate=0.01,
                        train_dir=str(tmp_path), save_model_steps=2, display_every=100,
                        gradient_accumulation_steps=2)
        model = keras.Sequential([keras.Input((2, 2, 1)), keras.layers.Flatten(name="f"),
                                  keras.layers.Dense(num_examples, name="d")], name="ids")
        trainer = Trainer(params, model=model, loss_fn=recorder.loss_fn(),
                          input_source=from_arrays(images, ids, global_batch, shuffle=True,
                                                   num_epochs=epochs)
                          if input_kind == "arrays" else
                          queue_input(images, ids, global_batch, epochs))
        try:
            return trainer.train(write=lambda line: None, callbacks=[recorder])
        finally:
            trainer.close()

    with pytest.raises(KeyboardInterrupt):
        run(5)
    assert latest_step(str(tmp_path)) == 4  # mid-epoch 2: after its first update
    assert run(None).steps == 9
    assert [len(seen[s]) for s in range(1, 10)] == [16, 16, 5] * 3
    for epoch in range(epochs):
        trained = sorted(sum((seen[s] for s in range(epoch * 3 + 1, epoch * 3 + 4)), []))
        assert trained == ids.tolist()  # each example exactly once, none skipped
