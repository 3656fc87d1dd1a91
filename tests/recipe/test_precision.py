"""--use_fp16 / --use_bf16 (mixed precision, loss scaling) and --xla_compile."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.input_pipeline import from_arrays
from towertrain.models import FusedBatchNormalization

NUM_EXAMPLES = 64


def _data(seed=0, classes=4):
    """A learnable task: the class sets which quarter of the image is bright."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, NUM_EXAMPLES).astype(np.int32)
    images = rng.normal(0, 0.1, (NUM_EXAMPLES, 8, 8, 3)).astype(np.float32)
    for i, label in enumerate(labels):
        row, col = divmod(int(label), 2)
        images[i, row * 4:(row + 1) * 4, col * 4:(col + 1) * 4, :] += 1.0
    return images, labels


def _bn_model():
    return keras.Sequential([
        keras.Input((8, 8, 3)),
        keras.layers.Conv2D(8, 3, padding="same", name="conv"),
        FusedBatchNormalization(name="bn"),
        keras.layers.ReLU(name="relu"),
        keras.layers.GlobalAveragePooling2D(name="pool"),
        keras.layers.Dense(4, name="logits")], name="bn_net")


def _trainer(policy=None, steps=30, **overrides):
    images, labels = _data()
    if policy:
        keras.mixed_precision.set_dtype_policy(policy)
    try:
        keras.utils.set_random_seed(5)
        model = _bn_model()
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    params = Params(device="cpu", num_gpus=2, variable_update="replicated",
                    init_learning_rate=0.1, optimizer="momentum", num_batches=steps,
                    num_warmup_batches=0, display_every=1000, allow_emulated_precision=True,
                    **overrides)
    return Trainer(params, model=model, input_source=from_arrays(images, labels, 16))


@pytest.mark.parametrize("flag,policy,compute",
                         [("use_fp16", "mixed_float16", tf.float16),
                          ("use_bf16", "mixed_bfloat16", tf.bfloat16)])
def test_half_precision_trains_with_falling_loss_and_float32_variables(flag, policy, compute):
    trainer = _trainer(policy, steps=60, **{flag: True})
    losses = [trainer.step().loss for _ in range(60)]
    assert all(np.isfinite(losses))
    assert np.mean(losses[-5:]) < 0.6 * np.mean(losses[:5]), losses
    for copy in trainer.variables.trainable_copies() + trainer.variables.non_trainable_copies():
        assert all(tf.as_dtype(v.dtype) == tf.float32 for v in copy)
    # The towers really compute in half precision: the traced convolutions do.
    graph = trainer.trace_step().graph
    convs = [op for op in graph.get_operations() if op.type == "Conv2D"]
    assert convs and all(op.outputs[0].dtype == compute for op in convs)
    # Batch norm takes half-precision activations with float32 statistics.
    norms = [op for op in graph.get_operations() if op.type == "FusedBatchNormV3"]
    assert norms and all(op.inputs[0].dtype == compute and op.inputs[1].dtype == tf.float32
                         for op in norms)


@pytest.mark.parametrize("flag,policy", [("use_bf16", "mixed_bfloat16"),
                                         ("use_fp16", "mixed_float16")])
def test_registry_models_are_built_under_the_policy_and_the_global_policy_is_restored(
        flag, policy):
    params = Params(model="resnet20", device="cpu", num_gpus=1, batch_size=2,
                    allow_emulated_precision=True, **{flag: True})
    trainer = Trainer(params)
    assert {layer.dtype_policy.name for layer in trainer.model.layers if layer.weights} == {
        policy}
    assert keras.mixed_precision.dtype_policy().name == "float32"


def test_a_float32_model_with_use_bf16_is_a_clear_error():
    keras.utils.set_random_seed(1)
    with pytest.raises(ValueError, match=r"--use_bf16: the model passed in computes in "
                                         r"float32; build it under .*mixed_bfloat16"):
        Trainer(Params(device="cpu", use_bf16=True, allow_emulated_precision=True),
                model=_bn_model(),
                input_source=from_arrays(*_data(), 16))


def test_dynamic_loss_scale_halves_on_overflow_and_doubles_after_n_finite_steps():
    trainer = _trainer("mixed_float16", use_fp16=True, fp16_enable_auto_loss_scale=True,
                       fp16_loss_scale=1024.0, fp16_inc_loss_scale_every_n=3)
    scale = trainer.loss_scale
    seen = []
    for _ in range(3):
        result = trainer.step()
        seen.append(result.extras["loss_scale"])
    assert seen == [1024.0, 1024.0, 2048.0]  # doubled after 3 finite steps
    before = [v.numpy() for v in trainer.variables.trainable_copies()[1]]
    step_before = trainer.global_step()
    # An overflow: a scale so large that the float16 gradients become inf.
    scale.scale.assign(2.0 ** 40)
    result = trainer.step()
    assert not result.finite and result.extras["loss_scale"] == 2.0 ** 39
    assert trainer.global_step() == step_before  # nothing applied...
    for variable, value in zip(trainer.variables.trainable_copies()[1], before):
        np.testing.assert_array_equal(variable.numpy(), value)  # ...on any copy
    assert int(scale.good_steps.numpy()) == 0


def test_fixed_loss_scale_stays_and_training_matches_float32_closely():
    fp16 = _trainer("mixed_float16", steps=5, use_fp16=True)
    fp32 = _trainer(None, steps=5)
    for _ in range(5):
        half, full = fp16.step(), fp32.step()
        assert half.extras["loss_scale"] == 128.0
        assert half.loss == pytest.approx(full.loss, rel=0.05, abs=0.02)


def test_dynamic_loss_scale_survives_a_resume(tmp_path):
    kw = dict(use_fp16=True, fp16_enable_auto_loss_scale=True, fp16_loss_scale=64.0,
              fp16_inc_loss_scale_every_n=2, train_dir=str(tmp_path))
    first = _trainer("mixed_float16", steps=4, **kw)
    first.train(write=lambda line: None)
    saved = float(first.loss_scale.scale.numpy())
    assert saved == 256.0  # two doublings in four finite steps
    resumed = _trainer("mixed_float16", steps=5, **kw)
    lines = []
    resumed.train(write=lines.append)
    assert any(line.startswith("Resumed:") for line in lines)
    assert float(resumed.loss_scale.scale.numpy()) == 256.0  # restored, then 1 step


def test_xla_compile_equals_the_plain_step():
    plain = _trainer(None, steps=3)
    xla = _trainer(None, steps=3, xla_compile=True)
    for _ in range(3):
        assert xla.step().loss == pytest.approx(plain.step().loss, rel=1e-5)
    for got, want in zip(xla.variables.trainable_copies()[0],
                         plain.variables.trainable_copies()[0]):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    # Each tower's compute is an XLA cluster on its own device.
    graph = xla.trace_step().graph
    compiled = [op for op in graph.get_operations()
                if op.type in ("StatefulPartitionedCall", "PartitionedCall")
                and _must_compile(op)]
    assert sorted(op.device for op in compiled) == ["/device:CPU:0", "/device:CPU:1"]


def _must_compile(op):
    try:
        return op.get_attr("_XlaMustCompile")
    except ValueError:
        return False


def test_a_fixed_loss_scale_is_the_one_given_and_reaches_the_gradients():
    trainer = _trainer("mixed_float16", steps=3, use_fp16=True, fp16_loss_scale=512.0)
    assert not trainer.loss_scale.dynamic
    results = [trainer.step() for _ in range(3)]
    assert [r.extras["loss_scale"] for r in results] == [512.0] * 3
    assert all(r.finite for r in results)
    # 2**40 times the loss overflows the float16 backward pass: the step is
    # skipped, which only happens if the scale multiplies the loss.
    huge = _trainer("mixed_float16", steps=1, use_fp16=True, fp16_loss_scale=2.0 ** 40)
    assert not huge.step().finite
