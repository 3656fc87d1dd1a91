"""A non-finite step applies nothing, and a diverged run stops with one error
line leaving only finite checkpoints."""
import os
import re
import shutil
import subprocess

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer

from helpers import tiny_models  # noqa: F401 - registers ckpt_tiny
import helpers.cli
from helpers import checkpoint_files


# ---------------------------------------------------------------------------
# 1. A step whose loss is finite but whose gradients are not applies nothing.

def _switchable_nan_gradient_loss(poison):
    """Cross-entropy plus sqrt(|z - stop_gradient(z)|): the added value is exactly
    0 (the loss stays finite) but its gradient is 0 * inf = NaN, while `poison`
    (a tf.Variable) is True."""
    def loss_fn(labels, logits):
        ce = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        extra = tf.cond(
            poison,
            lambda: tf.reduce_sum(tf.sqrt(tf.abs(logits - tf.stop_gradient(logits))), -1),
            lambda: tf.zeros_like(ce))
        return ce + extra
    return loss_fn


def test_the_poison_loss_is_finite_with_nan_gradients():
    logits = tf.constant([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]])
    loss_fn = _switchable_nan_gradient_loss(tf.Variable(True))
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = tf.reduce_sum(loss_fn(tf.constant([0, 2]), logits))
    grads = tape.gradient(loss, logits).numpy()
    assert np.isfinite(loss.numpy())
    assert np.all(np.isnan(grads))


def _every_copy(trainer):
    """{name: numpy value} of every variable copy, optimizer slot and step counter."""
    manager = trainer.variables
    trainable = manager.trainable_copies()
    non_trainable = (manager.non_trainable_copies() if hasattr(manager, "non_trainable_copies")
                     else [manager.primary_variables()[1]])
    values = {}
    for c, copy in enumerate(trainable):
        values.update({f"trainable/{c}/{v.path}": v.numpy() for v in copy})
    for c, copy in enumerate(non_trainable):
        values.update({f"non_trainable/{c}/{v.path}": v.numpy() for v in copy})
    for o, optimizer in enumerate(manager.optimizers()):
        values[f"optimizer/{o}/iterations"] = optimizer.iterations.numpy()
        values.update({f"optimizer/{o}/{v.path}": v.numpy() for v in optimizer.variables})
    return values


@pytest.mark.parametrize("mode", ["replicated", "parameter_server"])
def test_nan_gradients_with_a_finite_loss_apply_nothing_on_any_copy(mode):
    poison = tf.Variable(False)
    trainer = Trainer(tiny_models.tiny_params(mode, 2),
                      loss_fn=_switchable_nan_gradient_loss(poison))
    # A normal step first: slots and batch-norm statistics hold non-initial values.
    assert trainer.step().finite
    poison.assign(True)
    before = _every_copy(trainer)
    assert any(k.startswith("non_trainable/") for k in before)
    assert sum(1 for k in before if "momentum" in k) >= 4

    result = trainer.step()
    assert np.isfinite(result.loss) and result.examples == 6
    assert result.finite is False
    after = _every_copy(trainer)
    assert sorted(after) == sorted(before)
    for name, value in before.items():
        assert after[name].tobytes() == value.tobytes(), name  # bit-identical
    assert trainer.global_step() == 1

    poison.assign(False)
    result = trainer.step()
    assert result.finite is True and np.isfinite(result.loss)
    trained = _every_copy(trainer)
    assert trainer.global_step() == 2
    for name, value in before.items():
        if name.startswith("trainable/"):
            assert not np.array_equal(trained[name], value), name
            assert np.all(np.isfinite(trained[name])), name
    if mode == "replicated":  # the copies still agree bit for bit
        for mine, ref in zip(*trainer.variables.trainable_copies()):
            assert mine.numpy().tobytes() == ref.numpy().tobytes()


# ---------------------------------------------------------------------------
# 2. A diverging CLI run stops with one error line and leaves finite checkpoints.

DIVERGE_FLAGS = ["--model=trivial", "--device=cpu", "--num_gpus=2", "--save_model_steps=1",
                 "--num_warmup_batches=0", "--batch_size=4", "--display_every=1"]


def _checkpoint_steps(train_dir):
    return sorted(int(m.group(1)) for m in (re.match(r"ckpt-(\d+)\.index$", name)
                                             for name in os.listdir(train_dir)) if m)


@pytest.fixture(scope="module")
def diverged_run(tmp_path_factory):
    """(train_dir, completed process) of a trivial run at --init_learning_rate=1e10."""
    train_dir = str(tmp_path_factory.mktemp("diverged"))
    done = subprocess.run(helpers.cli.command(*DIVERGE_FLAGS, "--init_learning_rate=1e10", "--num_batches=50",
                               f"--train_dir={train_dir}"),
                          capture_output=True, text=True, env=helpers.cli.unbuffered_env(), timeout=300)
    return train_dir, done


@pytest.mark.slow
def test_diverged_cli_run_fails_with_one_line_and_leaves_only_finite_checkpoints(diverged_run):
    train_dir, done = diverged_run
    assert done.returncode != 0, done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("towertrain: error:")]
    assert len(errors) == 1, done.stderr
    found = re.search(r"(?:at|saving) step (\d+)\b", errors[0])
    assert found, errors
    assert re.search(r"not finite|loss is (nan|inf|-inf)", errors[0]), errors
    step = int(found.group(1))
    assert 2 <= step < 50, done.stdout  # stopped early, after at least one saved step
    assert "Saved checkpoint" not in done.stdout
    # Every step before the failing one was saved (--save_model_steps=1), it was
    # not; the one right before it (its state leads straight to the divergence,
    # whatever the learning rate) is set aside, so a resume starts before it.
    steps = _checkpoint_steps(train_dir)
    assert steps == list(range(max(1, step - 1 - 4), step - 1))  # 5 kept, minus one
    assert os.path.exists(os.path.join(train_dir, f"diverged-ckpt-{step - 1}.index"))
    assert f"Set aside {os.path.join(train_dir, f'ckpt-{step - 1}')}" in done.stdout
    latest = tf.train.latest_checkpoint(train_dir)
    assert (latest.endswith(f"ckpt-{step - 2}") if step > 2 else latest is None), latest
    largest = {}
    for saved in steps + [f"diverged-{step - 1}"]:
        name = f"ckpt-{saved}" if isinstance(saved, int) else f"diverged-ckpt-{step - 1}"
        reader = tf.train.load_checkpoint(os.path.join(train_dir, name))
        floats = 0
        for name in reader.get_variable_to_shape_map():
            value = reader.get_tensor(name)
            if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                floats += 1
                assert np.all(np.isfinite(value)), f"ckpt-{saved}: {name}"
                largest[saved] = max(largest.get(saved, 0.0), float(np.max(np.abs(value))))
        assert floats >= 4  # the model's kernels and biases were read
    # The weights really blew up (the initial ones are below 1).
    assert largest[f"diverged-{step - 1}"] > 1e6, largest


@pytest.mark.slow
def test_resume_after_divergence_with_a_sane_learning_rate_trains(diverged_run, tmp_path):
    train_dir = str(tmp_path / "resume")
    shutil.copytree(diverged_run[0], train_dir)
    resumed_from = (_checkpoint_steps(train_dir) or [0])[-1]
    params = Params(model="trivial", device="cpu", num_gpus=2, save_model_steps=1,
                    num_warmup_batches=0, batch_size=4, display_every=100,
                    init_learning_rate=0.01, num_batches=resumed_from + 3, train_dir=train_dir)
    # The copy is a later writer's train_dir: the state file the set-aside
    # rewrote must name the copy's own checkpoints, or the resume reads the
    # original's and its max_to_keep deletions remove the original's files.
    original = checkpoint_files.files_of(diverged_run[0])
    lines = []
    trainer = Trainer(params)
    try:
        result = trainer.train(write=lines.append)
    finally:
        trainer.close()
    assert result.steps == resumed_from + 3 and np.isfinite(result.final_loss)
    if resumed_from:
        own = os.path.join(train_dir, f"ckpt-{resumed_from}")
        assert any(line.startswith("Resumed:") and f"({own})" in line for line in lines), [
            line for line in lines if line.startswith("Resumed")]
    assert checkpoint_files.files_of(diverged_run[0]) == original
