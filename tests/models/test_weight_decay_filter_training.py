"""docs: `models.register(..., weight_decay_filter=...)`, a registered model's
own rule for which variables get L2, is what a training run decays (not the
default kernels-only rule). Checked on one SGD step against the update
computed by hand: L2 adds weight_decay * v to each decayed variable's gradient."""
import keras
import numpy as np
import pytest

from towertrain import Params, Trainer, models
from towertrain.input_pipeline import from_arrays
from models import registry

LEARNING_RATE, WEIGHT_DECAY = 0.1, 0.5


def _build(num_classes, data_format, image_size):
    return keras.Sequential([
        keras.Input(models.input_shape(image_size, data_format)),
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(num_classes, name="logits", bias_initializer="ones"),
    ], name="bias_decay")


@pytest.fixture
def bias_only_model(monkeypatch):
    """A model registered with a rule the default never picks: biases only."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    models.register_model("bias_decay", _build, default_image_size=4, default_batch_size=4,
                          default_dataset="cifar10",
                          weight_decay_filter=lambda v: v.path.endswith("bias"))
    return "bias_decay"


def _one_step(name, weight_decay):
    rng = np.random.default_rng(0)
    data = from_arrays(rng.standard_normal((4, 4, 4, 3)).astype(np.float32),
                       rng.integers(0, 10, 4).astype(np.int32), 4)
    trainer = Trainer(Params(model=name, device="cpu", num_gpus=1, batch_size=4,
                             optimizer="sgd", init_learning_rate=LEARNING_RATE,
                             weight_decay=weight_decay, tf_random_seed=3),
                      input_source=data)
    try:
        before = {v.path: v.numpy() for v in trainer.model.trainable_variables}
        trainer.step()
        trainer.sync_model()
        return before, {v.path: v.numpy() for v in trainer.model.trainable_variables}
    finally:
        trainer.close()


def test_a_registered_weight_decay_filter_is_the_one_training_uses(bias_only_model):
    before, plain = _one_step(bias_only_model, 0.0)
    _, decayed = _one_step(bias_only_model, WEIGHT_DECAY)
    kernel, bias = "bias_decay/logits/kernel", "bias_decay/logits/bias"
    np.testing.assert_array_equal(decayed[kernel], plain[kernel])
    np.testing.assert_allclose(
        decayed[bias], plain[bias] - LEARNING_RATE * WEIGHT_DECAY * before[bias], atol=1e-6)
