"""Guards a user relies on without looking: a non-finite step applies nothing,
a diverged run leaves only finite checkpoints, towers draw their own dropout
masks under stable checkpoint keys, the user's model ends up trained, signals
stop cleanly, the run record survives a failed resume, images/sec counts real
examples, and a resumed run warms up like a fresh one."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.state import checkpoint as ckpt_lib
from towertrain.state import export as export_lib
from towertrain.engine import loop as loop_lib
from towertrain.callbacks import Callback, Checkpointer, StopOnSignal
from towertrain.state.checkpoint import CheckpointError
from towertrain.errors import TrainingDivergedError
from towertrain.input_pipeline import from_arrays

from helpers import tiny_models  # noqa: F401 - registers ckpt_tiny
import helpers.cli


def _quiet(line):
    del line


def _environment():
    return dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="3")


def _cli(*flags):
    return helpers.cli.command(*flags)


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
# 3. Dropout: each tower draws its own mask; one tower draws what Keras draws.

DROP_UNITS = 16


def _dropout_model(name="dropnet", units=DROP_UNITS):
    inputs = keras.Input((units,))
    dropped = keras.layers.Dropout(0.5, name="drop")(inputs)
    outputs = keras.layers.Dense(units, name="out", use_bias=False,
                                 kernel_initializer="identity")(dropped)
    return keras.Model(inputs, outputs, name=name)


def _logits_recorder(store):
    """Cross-entropy that also records each tower's logits, keyed by its labels
    (every tower gets its own label value)."""
    def record(labels, logits):
        store.setdefault(int(labels.numpy()[0]), []).append(logits.numpy())
        return np.float32(0)

    def loss_fn(labels, logits):
        zero = tf.py_function(record, [labels, tf.stop_gradient(logits)], tf.float32)
        return keras.losses.sparse_categorical_crossentropy(
            labels, logits, from_logits=True) + zero
    return loss_fn


def _dropout_trainer(num_towers, per_tower, store, model=None):
    images = np.ones((num_towers * per_tower, DROP_UNITS), np.float32)
    labels = np.repeat(np.arange(num_towers), per_tower).astype(np.int32)
    params = Params(device="cpu", num_gpus=num_towers, variable_update="replicated",
                    num_warmup_batches=0, num_batches=2, init_learning_rate=1e-6,
                    display_every=100)
    return Trainer(params, model=model or _dropout_model(),
                   input_source=from_arrays(images, labels, len(images)),
                   loss_fn=_logits_recorder(store))


def test_towers_draw_independent_dropout_masks():
    store = {}
    trainer = _dropout_trainer(2, 4, store)
    trainer.step()
    trainer.step()
    assert sorted(store) == [0, 1] and all(len(v) == 2 for v in store.values())
    # The identity kernel (barely trained) passes the mask through: kept inputs
    # read 2 (1 / keep probability), dropped ones ~0.
    masks = {tower: [logits > 1 for logits in values] for tower, values in store.items()}
    for tower, values in store.items():
        for logits, mask in zip(values, masks[tower]):
            np.testing.assert_allclose(logits, 2.0 * mask, atol=1e-3)
            assert 0 < np.count_nonzero(mask) < mask.size
    # 4 x 16 values at rate 0.5: equal masks by chance have probability 2**-64.
    for step in range(2):
        assert not np.array_equal(masks[0][step], masks[1][step]), f"step {step}"
    # Each tower's generator advances: a new mask every step.
    assert not np.array_equal(masks[0][0], masks[0][1])
    assert not np.array_equal(masks[1][0], masks[1][1])


def test_one_tower_draws_what_keras_stateless_call_draws():
    store = {}
    model = _dropout_model()
    trainable = [v.numpy() for v in model.trainable_variables]
    non_trainable = [v.numpy() for v in model.non_trainable_variables]
    x = np.ones((4, DROP_UNITS), np.float32)
    expected, _ = model.stateless_call(trainable, non_trainable, x, training=True)
    trainer = _dropout_trainer(1, 4, store, model=model)
    trainer.step()
    np.testing.assert_array_equal(store[0][0], expected.numpy())


# ---------------------------------------------------------------------------
# 4. A seed generator's checkpoint key names its layer, not Keras' counter.

def _unrelated_dropouts(count):
    for _ in range(count):
        keras.Sequential([keras.Input((3,)), keras.layers.Dropout(0.3)])


def test_seed_generator_keys_do_not_depend_on_layers_built_before():
    _unrelated_dropouts(3)
    first = ckpt_lib.model_variable_dict(_dropout_model())
    _unrelated_dropouts(5)
    second = ckpt_lib.model_variable_dict(_dropout_model())
    assert "drop__seed_generator_state" in first
    assert sorted(first) == sorted(second) == ["drop__seed_generator_state", "out__kernel"]


def test_checkpoint_restores_into_a_model_built_after_other_layers(tmp_path):
    images = np.ones((8, DROP_UNITS), np.float32)
    labels = np.arange(8, dtype=np.int32) % DROP_UNITS

    def trainer():
        params = Params(device="cpu", num_gpus=2, variable_update="replicated",
                        num_warmup_batches=0, num_batches=3, init_learning_rate=0.1,
                        display_every=100, train_dir=str(tmp_path))
        return Trainer(params, model=_dropout_model(),
                       input_source=from_arrays(images, labels, 8))

    _unrelated_dropouts(2)
    source = trainer()
    source.train(write=_quiet)
    saved = ckpt_lib.model_variable_dict(source.model, *source.variables.primary_variables())
    _unrelated_dropouts(4)
    target = trainer()
    assert Checkpointer(target, str(tmp_path)).restore_latest().endswith("ckpt-3")
    restored = ckpt_lib.model_variable_dict(target.model, *target.variables.primary_variables())
    assert sorted(restored) == sorted(saved)
    for key, variable in saved.items():
        np.testing.assert_array_equal(restored[key].numpy(), variable.numpy(), err_msg=key)
    # The generator's state moved during training, and was restored, not fresh.
    fresh = _dropout_model().non_trainable_variables[0].numpy()
    assert not np.array_equal(restored["drop__seed_generator_state"].numpy(), fresh)


# ---------------------------------------------------------------------------
# 5. train() leaves the trained values in the user's own Keras model.

def test_the_users_model_holds_the_trained_weights():
    rng = np.random.RandomState(0)
    images = rng.randn(16, 4, 4, 3).astype(np.float32)
    labels = rng.randint(0, 5, 16).astype(np.int32)
    keras.utils.set_random_seed(5)
    model = tiny_models.build_tiny(5, "channels_last", 4)  # has batch norm
    before = model.predict(images, verbose=0)
    params = Params(device="cpu", num_gpus=2, variable_update="replicated",
                    optimizer="momentum", num_warmup_batches=0, num_batches=3,
                    init_learning_rate=0.1, display_every=100)
    trainer = Trainer(params, model=model, input_source=from_arrays(images, labels, 8))
    trainer.train(write=_quiet)
    after = model.predict(images, verbose=0)
    assert not np.allclose(after, before)
    trainable, non_trainable = trainer.variables.primary_variables()
    for mine, trained in zip(model.trainable_variables, trainable):
        np.testing.assert_array_equal(mine.numpy(), trained.numpy())
    for mine, trained in zip(model.non_trainable_variables, non_trainable):
        np.testing.assert_array_equal(mine.numpy(), trained.numpy())


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
    done = subprocess.run(_cli(*DIVERGE_FLAGS, "--init_learning_rate=1e10", "--num_batches=50",
                               f"--train_dir={train_dir}"),
                          capture_output=True, text=True, env=_environment(), timeout=300)
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
    trainer = Trainer(params)
    try:
        result = trainer.train(write=_quiet)
    finally:
        trainer.close()
    assert result.steps == resumed_from + 3 and np.isfinite(result.final_loss)


# ---------------------------------------------------------------------------
# 6. SIGINT/SIGTERM: the first stops the loop, a second exits at once.

class _Exited(Exception):
    pass


def _fake_exit(code):
    raise _Exited(code)


def _wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


@pytest.mark.parametrize("first,second", [(signal.SIGTERM, signal.SIGTERM),
                                          (signal.SIGINT, signal.SIGTERM)])
def test_first_signal_stops_the_loop_and_a_second_exits_at_once(monkeypatch, first, second):
    fake_trainer = types.SimpleNamespace(global_step=lambda: 0, total_steps=10)
    callback = StopOnSignal(saves_on_stop=False, write=_quiet)
    loop = loop_lib.Loop(fake_trainer, [callback])
    previous = {sig: signal.getsignal(sig) for sig in StopOnSignal.SIGNALS}
    monkeypatch.setattr(os, "_exit", _fake_exit)
    callback.before_train(loop)
    try:
        os.kill(os.getpid(), first)  # handled: nothing exits
        assert _wait_for(lambda: loop.stop_reason is not None)
        assert loop.stop_reason == signal.Signals(first).name
        with pytest.raises(_Exited) as exited:
            os.kill(os.getpid(), second)
            _wait_for(lambda: False, timeout=5)
        assert exited.value.args == (128 + second,)
        assert loop.stop_reason == signal.Signals(first).name  # the first reason is kept
    finally:
        callback.close()
    for sig, handler in previous.items():
        assert signal.getsignal(sig) is handler


@pytest.mark.slow
def test_sigterm_through_the_cli_saves_the_step_it_names_and_exits_zero(tmp_path):
    train_dir = str(tmp_path)
    proc = subprocess.Popen(_cli("--model=trivial", "--device=cpu", "--num_gpus=2",
                                 "--num_warmup_batches=0", "--batch_size=4", "--display_every=1",
                                 "--num_batches=100000", f"--train_dir={train_dir}"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_environment())
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if re.match(r"^3\t", line):
                break
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = "".join(lines) + out
    assert proc.returncode == 0, err
    stopped = re.search(r"^Received SIGTERM: saved checkpoint at step (\d+) to (\S+)$", text,
                        re.M)
    assert stopped, text
    step = int(stopped.group(1))
    # The step saved is the last one finished, and its step line was printed.
    last_logged = max(int(m.group(1)) for m in re.finditer(r"^(\d+)\timages/sec", text, re.M))
    assert step == last_logged >= 3
    assert stopped.group(2).endswith(f"ckpt-{step}")
    assert tf.train.latest_checkpoint(train_dir).endswith(f"ckpt-{step}")
    reader = tf.train.load_checkpoint(train_dir)
    assert int(reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE")) == step


# ---------------------------------------------------------------------------
# 7. The run record is written only after a successful restore.

def _tiny_run_params(train_dir, **kw):
    kw.setdefault("num_batches", 2)
    kw.setdefault("num_warmup_batches", 0)
    return Params(model="trivial", device="cpu", num_gpus=2, batch_size=2, display_every=100,
                  train_dir=train_dir, **kw)


def _read_record(train_dir):
    with open(os.path.join(train_dir, ckpt_lib.RUN_INFO_FILE)) as f:
        return json.load(f)


def _train(params, **kw):
    trainer = Trainer(params, **kw)
    try:
        return trainer.train(write=_quiet)
    finally:
        trainer.close()


def test_a_failed_resume_leaves_the_run_record_and_export_working(tmp_path):
    train_dir = str(tmp_path / "run")
    _train(_tiny_run_params(train_dir))
    record = _read_record(train_dir)
    assert record["model"] == "trivial" and record["num_classes"] == 10

    # Another registered model: refused by name before anything is restored.
    other = _tiny_run_params(train_dir).replace(model="ckpt_tiny")
    with pytest.raises(CheckpointError, match=r"--model=ckpt_tiny.*--model=trivial"):
        _train(other)
    assert _read_record(train_dir) == record

    # The same model name but another network (a user's model): the record's
    # check passes, the restore fails, and the record must still describe the run.
    keras.utils.set_random_seed(1)
    impostor = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten(name="flatten"),
                                 keras.layers.Dense(4, name="logits")], name="trivial")
    with pytest.raises(CheckpointError, match="does not match the model"):
        _train(_tiny_run_params(train_dir), model=impostor)
    assert _read_record(train_dir) == record

    output = str(tmp_path / "exported.keras")
    export_lib.export(train_dir=train_dir, output=output)
    exported = keras.saving.load_model(output)
    assert exported.output_shape == (None, 10)
    reader = tf.train.load_checkpoint(train_dir)
    np.testing.assert_array_equal(
        exported.get_layer("logits").kernel.numpy(),
        reader.get_tensor("model/logits__kernel/.ATTRIBUTES/VARIABLE_VALUE"))


# ---------------------------------------------------------------------------
# 11. Steps report (and images/sec counts) the examples they really trained on.

class _Recorder(Callback):
    def __init__(self):
        self.steps = []

    def after_step(self, step, result, seconds):
        self.steps.append((step, result.examples, seconds))


@pytest.mark.parametrize("staging_depth", [0, 1])
def test_partial_last_batch_counts_its_real_examples(staging_depth):
    images = np.random.RandomState(0).rand(21, 2, 2, 1).astype(np.float32)
    labels = np.arange(21, dtype=np.int32) % 3
    params = Params(device="cpu", num_gpus=2, num_epochs=1, num_warmup_batches=0,
                    staging_depth=staging_depth, init_learning_rate=0.01, display_every=1)
    model = keras.Sequential([keras.Input((2, 2, 1)), keras.layers.Flatten(),
                              keras.layers.Dense(3)])
    trainer = Trainer(params, model=model,
                      input_source=from_arrays(images, labels, 8, num_epochs=1))
    recorder, lines = _Recorder(), []
    result = trainer.train(write=lines.append, callbacks=[recorder])
    assert [(step, n) for step, n, _ in recorder.steps] == [(1, 8), (2, 8), (3, 5)]
    seconds = sum(s for _, _, s in recorder.steps)
    assert result.images_per_sec == pytest.approx(21 / seconds)
    assert f"total images/sec: {21 / seconds:.2f}" in lines


# ---------------------------------------------------------------------------
# 12. A resumed run warms up as a fresh one does; step numbers continue.

def test_a_resumed_run_warms_up_and_continues_the_step_numbers(tmp_path):
    train_dir = str(tmp_path)
    first = []
    Trainer(_tiny_run_params(train_dir, num_warmup_batches=2, num_batches=2)).train(
        write=first.append)
    assert "Running warm up" in first and "Done warm up" in first
    assert [line for line in first if re.match(r"\d+\t", line)][0].startswith("3\t")

    lines = []
    trainer = Trainer(_tiny_run_params(train_dir, num_warmup_batches=2, num_batches=6))
    result = trainer.train(write=lines.append)
    assert result.steps == 8
    assert any(re.match(r"Resumed:\s+from step 4 ", line) for line in lines), lines
    assert lines.index("Running warm up") < lines.index("Done warm up")
    step_lines = [line for line in lines if re.match(r"\d+\t", line)]
    assert step_lines[0].startswith("7\t"), lines
    assert lines.index("Done warm up") < lines.index(step_lines[0])
