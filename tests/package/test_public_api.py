"""The library entry point: the public names, and a user's own Keras model on numpy
data trained through them on 2 logical devices equals serial Keras training."""
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import towertrain

PUBLIC = {"Params", "Trainer", "Callback", "register_model", "from_arrays", "from_dataset",
          "from_generator", "Input", "EvalData", "use_logical_cpus", "ParamsError",
          "ModelError", "DeviceError", "TrainingDivergedError", "StepResult", "TrainResult",
          "InputError", "ClusterError", "CheckpointError", "OutOfMemoryError",
          "TrainerStateError"}
TRAINER_METHODS = ("train", "step", "evaluate", "sync_model", "export", "save", "restore",
                   "close")

STEPS, BATCH, LR = 4, 10, 0.1
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/<wing>/this file


def user_model():
    return keras.Sequential([
        keras.Input((8, 8, 3)),
        keras.layers.Conv2D(4, 3, activation="relu", name="conv"),
        keras.layers.GlobalAveragePooling2D(name="pool"),
        keras.layers.Dense(5, name="logits"),
    ], name="user_net")


def data():
    rng = np.random.default_rng(3)
    images = rng.standard_normal((STEPS * BATCH, 8, 8, 3)).astype(np.float32)
    labels = rng.integers(0, 5, STEPS * BATCH).astype(np.int64)
    return images, labels


def test_public_names_resolve_and_are_documented():
    # Exactly: a name added to __all__ must be added here, documented in the
    # package docstring and in docs/library.md's table.
    assert set(towertrain.__all__) == PUBLIC
    with open(os.path.join(ROOT, "docs", "library.md"), encoding="utf-8") as f:
        guide = f.read()
    table = guide[:guide.index("\n## ")]
    for name in PUBLIC:
        obj = getattr(towertrain, name)
        assert obj.__doc__, name
        assert name in towertrain.__doc__, name
        assert f"`{name}" in table, f"{name}: not in docs/library.md's table"
    for method in TRAINER_METHODS:
        assert getattr(towertrain.Trainer, method).__doc__, method
        assert f"{method}()" in towertrain.__doc__, f"Trainer.{method}: not in the docstring"
        assert f"{method}(" in table, f"Trainer.{method}: not in docs/library.md's table"
    assert issubclass(towertrain.DeviceError, RuntimeError)


def test_user_model_on_two_devices_equals_serial_keras_and_predicts():
    towertrain.use_logical_cpus(2)  # conftest already made 4: a no-op that must not fail
    images, labels = data()
    keras.utils.set_random_seed(11)
    model = user_model()
    reference = user_model()
    reference.set_weights(model.get_weights())

    params = towertrain.Params(device="cpu", num_gpus=2, variable_update="replicated",
                               init_learning_rate=LR)
    trainer = towertrain.Trainer(params, model=model,
                                 input_source=towertrain.from_arrays(images, labels, BATCH))
    for _ in range(STEPS):
        trainer.step()
    trainer.sync_model()
    trainer.close()

    reference.compile(optimizer=keras.optimizers.SGD(LR),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    reference.fit(images, labels, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)

    for got, want in zip(model.get_weights(), reference.get_weights()):
        scale = max(np.abs(want).max(), 1e-3)
        assert np.abs(got - want).max() <= 1e-5 * scale
    # The user's keras.Model predicts with the trained weights.
    np.testing.assert_allclose(model.predict(images[:6], verbose=0),
                               reference.predict(images[:6], verbose=0), atol=1e-5)


def test_from_dataset_of_examples_and_of_batches_train_alike(tmp_path):
    images, labels = data()
    results = []
    for make in (lambda: towertrain.from_dataset(
                     tf.data.Dataset.from_tensor_slices((images, labels)), global_batch=BATCH),
                 lambda: towertrain.from_dataset(
                     tf.data.Dataset.from_tensor_slices((images, labels)).batch(BATCH),
                     batched=True)):
        keras.utils.set_random_seed(11)
        model = user_model()
        params = towertrain.Params(device="cpu", num_gpus=2, init_learning_rate=LR)
        trainer = towertrain.Trainer(params, model=model, input_source=make())
        losses = [float(trainer.step()) for _ in range(STEPS)]
        trainer.close()
        results.append(losses)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
    # Trainer.export writes a stock .keras file with the trained weights.
    path = os.path.join(tmp_path, "m.keras")
    trainer.export(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded.predict(images[:4], verbose=0),
                               model.predict(images[:4], verbose=0), atol=1e-6)


def test_from_dataset_refuses_what_it_cannot_use():
    import pytest
    with pytest.raises(TypeError, match="tf.data.Dataset"):
        towertrain.from_dataset([1, 2])
    with pytest.raises(towertrain.ParamsError, match="global_batch"):
        towertrain.from_dataset(tf.data.Dataset.from_tensor_slices((np.zeros((4, 2)),
                                                                    np.zeros(4))))
    with pytest.raises(towertrain.ParamsError, match="pairs"):
        towertrain.from_dataset(tf.data.Dataset.from_tensor_slices(np.zeros((4, 2))), 2)


def test_devices_configured_too_late_fail_naming_the_fix():
    """In a fresh process: building a model runs ops, so a 2-device CPU Trainer
    made afterwards cannot get its devices and says how to; use_logical_cpus
    first works."""
    import subprocess
    import sys
    body = (
        "import sys, keras, numpy as np, towertrain\n"
        "{first}"
        "m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name='d')])\n"
        "try:\n"
        "    t = towertrain.Trainer(towertrain.Params(device='cpu', num_gpus=2), model=m,\n"
        "        input_source=towertrain.from_arrays(np.zeros((8, 4), 'float32'),\n"
        "                                            np.zeros(8, 'int64'), 4))\n"
        "except towertrain.DeviceError as err:\n"
        "    print('DeviceError:', err)\n"
        "    sys.exit(3)\n"
        "print('trained', float(t.step()))\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    late = subprocess.run([sys.executable, "-c", body.format(first="")], env=env,
                          capture_output=True, text=True, timeout=120)
    # Caught as the public towertrain.DeviceError, naming the whole fix.
    assert late.returncode == 3, late.stderr[-2000:]
    message = late.stdout.strip().splitlines()[-1]
    assert "before any op runs" in message, message
    assert "(towertrain.use_logical_cpus(2) first thing)" in message, message
    early = subprocess.run(
        [sys.executable, "-c", body.format(first="towertrain.use_logical_cpus(2)\n")],
        env=env, capture_output=True, text=True, timeout=120)
    assert early.returncode == 0 and "trained" in early.stdout, early.stderr[-2000:]


@pytest.mark.parametrize("given,seen", [(None, "1 on"), ("0", "0 off")])
def test_import_turns_onednn_on_before_tensorflow_unless_the_user_chose(given, seen):
    """NCHW on a CPU needs oneDNN, which TensorFlow enables by itself only on
    some CPUs; a user's own TF_ENABLE_ONEDNN_OPTS is left as it is."""
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    if given is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = given
    code = ("import os, towertrain; from towertrain import private_api; "
            "print(os.environ['TF_ENABLE_ONEDNN_OPTS'], "
            "'on' if private_api.onednn_enabled() else 'off')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-2:] == seen.split()


def test_every_exception_the_errors_page_names_is_importable_from_towertrain():
    """What docs/errors.md tells a user to expect, they can catch by that name."""
    import builtins
    import re
    from towertrain import errors
    with open(os.path.join(ROOT, "docs", "errors.md"), encoding="utf-8") as f:
        named = set(re.findall(r"\b([A-Z][A-Za-z]*Error)\b", f.read()))
    # TensorFlow's own (quoted in a message), and Python's.
    ours = {name for name in named
            if not hasattr(builtins, name) and not hasattr(tf.errors, name)}
    assert ours >= {"ParamsError", "CheckpointError", "InputError", "ClusterError",
                    "OutOfMemoryError", "TrainerStateError"}
    for name in sorted(ours):
        assert getattr(towertrain, name) is getattr(errors, name), name
        assert name in towertrain.__all__, name
