"""--fp16_vars: with --use_fp16 the trainable variables (every copy) and the
optimizer's slots are float16; batch norm keeps float32 parameters, as
tf_cnn_benchmarks' batch norm did."""
import numpy as np
import pytest
import tensorflow as tf

import helpers.tiny_models  # noqa: F401 - registers ckpt_tiny
from helpers.tiny_models import tiny_params
from towertrain import Trainer
from towertrain.errors import ParamsError


@pytest.mark.parametrize("mode", ["replicated", "parameter_server"])
def test_fp16_vars_stores_weights_and_slots_in_float16(mode):
    trainer = Trainer(tiny_params(mode, use_fp16=True, fp16_vars=True,
                                  allow_emulated_precision=True))
    result = trainer.train(write=lambda line: None)
    assert np.isfinite(result.final_loss)
    trainable, _ = trainer.variables.primary_variables()
    halves = [v for v in trainable if tf.as_dtype(v.dtype) == tf.float16]
    assert len(halves) == 4  # conv kernel and bias, dense kernel and bias
    assert {v.name for v in trainable if tf.as_dtype(v.dtype) == tf.float32} == {"ckpt_tiny__bn__gamma", "ckpt_tiny__bn__beta"}
    slots = [v for optimizer in trainer.variables.optimizers()
             for v in optimizer.variables if "momentum" in v.path]
    assert slots and {tf.as_dtype(v.dtype).name for v in slots} == {"float16", "float32"}
    # The Keras model the run writes back into holds float16 weights too.
    assert sum(tf.as_dtype(v.dtype) == tf.float16 for v in trainer.model.weights) == 4


def test_without_fp16_vars_the_variables_stay_float32():
    trainer = Trainer(tiny_params(use_fp16=True, num_batches=1, allow_emulated_precision=True))
    trainable, _ = trainer.variables.primary_variables()
    assert {tf.as_dtype(v.dtype).name for v in trainable} == {"float32"}


def test_fp16_vars_needs_use_fp16():
    with pytest.raises(ParamsError, match=r"^--fp16_vars=True: only applies with --use_fp16"):
        tiny_params(fp16_vars=True)


def test_fp16_vars_on_a_model_with_no_float32_variable_trains():
    """The trivial model has no batch norm: every gradient is float16, so
    the step's scalars (loss, count) have no float32 pack to ride and travel
    in one of their own."""
    from towertrain import Params
    trainer = Trainer(Params(model="trivial", device="cpu", num_gpus=2, variable_update="replicated",
                             use_fp16=True, fp16_vars=True, allow_emulated_precision=True,
                             batch_size=2, num_batches=2, num_warmup_batches=0))
    before = [v.numpy() for v in trainer.variables.trainable_copies()[0]]
    result = trainer.train(write=lambda line: None)
    trainable, _ = trainer.variables.primary_variables()
    assert {tf.as_dtype(v.dtype).name for v in trainable} == {"float16"}
    assert np.isfinite(result.final_loss)
    copies = [[v.numpy() for v in copy] for copy in trainer.variables.trainable_copies()]
    assert any(not np.array_equal(a, b) for a, b in zip(before, copies[0])), "nothing trained"
    for a, b in zip(*copies):  # one exchanged sum: the copies stay equal
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fp16_vars, said", [
    (True, "float16 (float16 variables; the models' batch norm keeps float32 parameters "
           "and statistics)"),
    (False, "mixed_float16 (float32 variables and batch-norm statistics)")])
def test_the_header_says_which_variables_are_float16(fp16_vars, said):
    trainer = Trainer(tiny_params(use_fp16=True, fp16_vars=fp16_vars, num_batches=1,
                                  allow_emulated_precision=True))
    values = dict(trainer.header_info())["Precision"]
    assert (values[0] if isinstance(values, list) else values) == said
