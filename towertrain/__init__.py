"""towertrain: data-parallel tower training for TensorFlow with Keras-defined models.

    import towertrain
    params = towertrain.Params(model="resnet20", device="cpu", num_gpus=2,
                               variable_update="replicated")
    towertrain.Trainer(params).train()

Names resolve lazily so that the CLI can configure logging and devices before
TensorFlow is imported.
"""
import importlib
import os

# oneDNN kernels are what run NCHW convolutions (and their gradients) on a CPU.
# TensorFlow turns them on by default only on some CPUs (AVX512 ones); set it
# before TensorFlow is imported so NCHW works on any x86 CPU. A user's own
# TF_ENABLE_ONEDNN_OPTS wins.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

_EXPORTS = {
    "Params": "towertrain.params",
    "ParamsError": "towertrain.params",
    "Trainer": "towertrain.trainer",
    "TrainingDivergedError": "towertrain.trainer",
    "TrainResult": "towertrain.trainer",
    "StepResult": "towertrain.trainer",
    "Callback": "towertrain.callbacks",
    "register_model": "towertrain.models",
    "build_model": ("towertrain.models", "build"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'towertrain' has no attribute {name!r}")
    module, attribute = target if isinstance(target, tuple) else (target, name)
    return getattr(importlib.import_module(module), attribute)
