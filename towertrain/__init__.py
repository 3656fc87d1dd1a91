"""towertrain: data-parallel tower training for TensorFlow with Keras-defined models.

The public surface (everything else is private to towertrain and may change):

    Params                 the run's settings (a frozen dataclass; CLI flag names)
    Trainer                train(), step(), evaluate(), sync_model(), export(),
                           save(), restore(), close(); save(path)/restore(path)
                           write and read a portable checkpoint (model,
                           optimizer slots, step); Params(train_dir=...) makes
                           train() save and resume with the input position too
                           (docs/library.md)
    Callback               base class of your own training-loop callbacks
    register_model         make --model=NAME build your Keras model
    from_arrays            input from in-memory numpy arrays
    from_dataset           input from any tf.data.Dataset of examples or of batches
    from_generator         input from a Python generator of examples
    Input, EvalData        base class of your own input; an eval split
    use_logical_cpus       N logical CPU devices; call before any TensorFlow op
    ParamsError, ModelError, InputError, ClusterError, DeviceError,
    CheckpointError, OutOfMemoryError, TrainingDivergedError, TrainerStateError
                           what goes wrong: bad settings, a model or data that
                           does not fit, bad input data, a bad cluster, devices
                           that cannot be had, a checkpoint that cannot be
                           used, a batch that does not fit in memory, a loss
                           that diverged, a Trainer method its state rules
                           out (step() after close()); docs/errors.md
    StepResult, TrainResult
                           what step() and train() return

On a CPU, a run over N devices needs N logical CPU devices, which TensorFlow
only allows configuring before any op runs:

    import towertrain
    towertrain.use_logical_cpus(2)          # first, before building any model
    params = towertrain.Params(device="cpu", num_gpus=2, variable_update="replicated",
                               init_learning_rate=0.05)
    trainer = towertrain.Trainer(params, model=my_keras_model,
                                 input_source=towertrain.from_arrays(images, labels, 64))

Names resolve lazily so that the CLI can configure logging and devices before
TensorFlow is imported.
"""
import importlib
import os

from towertrain import tf_import

# oneDNN kernels are what run NCHW convolutions (and their gradients) on a CPU.
# TensorFlow turns them on by default only on some CPUs (AVX512 ones); set it
# before TensorFlow is imported so NCHW works on any x86 CPU. A user's own
# TF_ENABLE_ONEDNN_OPTS wins.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

_EXPORTS = {
    "Params": "towertrain.config.params",
    "ParamsError": "towertrain.errors",
    "Trainer": "towertrain.trainer",
    "TrainingDivergedError": "towertrain.errors",
    "TrainResult": "towertrain.trainer",
    "StepResult": "towertrain.trainer",
    "Callback": "towertrain.callbacks",
    "register_model": "towertrain.models",
    "from_arrays": "towertrain.input_pipeline",
    "from_dataset": "towertrain.input_pipeline",
    "from_generator": "towertrain.input_pipeline",
    "Input": ("towertrain.input_pipeline.base", "Input"),
    "EvalData": ("towertrain.input_pipeline.base", "EvalData"),
    "ModelError": "towertrain.errors",
    "DeviceError": "towertrain.errors",
    "InputError": "towertrain.errors",
    "ClusterError": "towertrain.errors",
    "CheckpointError": "towertrain.errors",
    "OutOfMemoryError": "towertrain.errors",
    "TrainerStateError": "towertrain.errors",
}

# The names whose modules are pure Python (the plan and the settings).
_WITHOUT_TENSORFLOW = {"towertrain.config.params", "towertrain.errors"}

__all__ = sorted(set(_EXPORTS) | {"use_logical_cpus"})


def use_logical_cpus(count):
    """Makes `count` logical CPU devices (/cpu:0 .. /cpu:count-1) for a CPU run
    with Params(device="cpu", num_gpus=count).

    Call it first: TensorFlow allows it only before any op runs (building or
    calling a Keras model runs ops). Later it still succeeds if the process
    already has that many; otherwise it raises towertrain.DeviceError saying
    so. The CLI does this itself from --num_gpus.
    """
    # Here, not at the top: it imports TensorFlow, which `import towertrain` must not.
    from towertrain.engine.process import devices
    devices.ensure_logical_cpus(count)


def __getattr__(name):
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'towertrain' has no attribute {name!r}")
    module, attribute = target if isinstance(target, tuple) else (target, name)
    if module not in _WITHOUT_TENSORFLOW:
        # Through tf_import: its start-up lines once, not twice.
        tf_import.import_tensorflow()
    return getattr(importlib.import_module(module), attribute)


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
