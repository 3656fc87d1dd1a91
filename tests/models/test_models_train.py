"""One training step of every registered model through the engine, at batch 1
per device: the loss is finite.

Cheap models train on 1 logical CPU device (NCHW) and on 2 (NHWC), so both
formats and the multi-device path run. The default suite trims two kinds of
repetition (TOWERTRAIN_FULL_SWEEP=1 runs everything):
- models in helpers.model_checkpoints.REPRESENTED_BY (resnet32..110 and _v2,
  resnet50_v1.5/101/152, vgg16/19) repeat the builder code of resnet20(_v2),
  resnet50 or vgg11, which train here, with more blocks (or one stride moved);
  tests/models/test_models.py pins their structure by parameter counts (and
  v1.5's stride placement). In the full sweep they train on 1 device (NHWC).
- the costly ImageNet-size families (resnet50, inception3, googlenet, vgg11)
  and densenet40_k12 train in one configuration, 1 device NCHW: the
  format-specific layer code (test_models.py checks both formats, forward
  only). The multi-device path does not depend on the model; it runs with the
  cheap models here and in tests/engine.
Models are built small (32x32, or the model's min_image_size) and handed to the
Trainer, which otherwise builds the registry default.
"""
import math

import keras
import pytest
import tensorflow as tf

from towertrain import Params, Trainer, models

from helpers.model_checkpoints import REPRESENTED_BY, copy_mark, full_sweep_only

# Tracing these costs 5-35 s a configuration; one configuration runs by default.
_ONE_CONFIGURATION = {"resnet50", "inception3", "googlenet", "vgg11", "densenet40_k12"}


@pytest.fixture(autouse=True, scope="module")
def _no_grappler():
    """Grappler's graph rewrite is ~40% of a one-step test and checks nothing here."""
    saved = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    yield
    tf.config.optimizer.set_experimental_options(
        {"disable_meta_optimizer": saved.get("disable_meta_optimizer", False)})


def _cases():
    for name in models.registered_names():
        if name in REPRESENTED_BY:
            yield pytest.param(name, 1, "NHWC", marks=[pytest.mark.slow, copy_mark(name)],
                               id=f"{name}-1dev-NHWC")
            continue
        for num_devices, data_format in ((1, "NCHW"), (2, "NHWC")):
            marks = []
            if name in _ONE_CONFIGURATION and num_devices > 1:
                marks = [full_sweep_only(f"{name} trains on 1 device NCHW by default")]
            yield pytest.param(name, num_devices, data_format, marks=marks,
                               id=f"{name}-{num_devices}dev-{data_format}")


@pytest.mark.parametrize("name,num_devices,data_format", list(_cases()))
def test_one_training_step(name, num_devices, data_format):
    spec = models.get_spec(name)
    num_classes = models.DATASET_CLASSES[spec.default_dataset]
    model = models.build(name, num_classes=num_classes, data_format=data_format,
                         image_size=max(32, spec.min_image_size))
    params = Params(data_name=spec.default_dataset, device="cpu", num_gpus=num_devices,
                    batch_size=1, num_batches=1, num_warmup_batches=0, variable_update="replicated",
                    data_format=data_format)
    trainer = Trainer(params, model=model)
    loss = float(trainer.step())
    assert math.isfinite(loss) and loss > 0
    keras.backend.clear_session()
