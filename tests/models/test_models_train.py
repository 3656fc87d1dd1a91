"""One training step of every registered model through the engine, at batch 1
per device: the loss is finite.

Every model family trains on 1 logical CPU device (NCHW) and on 2 (NHWC), so
both formats and the multi-device path run. Deeper members of a family
(resnet32..110, resnet101/152, vgg16/19) share their builder code with
resnet20 / resnet50 / vgg11 and differ only in block or conv counts; their
step runs on 1 device (NHWC) and is marked slow, since tracing them (and, for
VGG, oneDNN's slow NCHW convolutions on CPU) costs most of this file's time.
Models are built small (32x32, or the model's min_image_size) and handed to the
Trainer, which otherwise builds the registry default.
"""
import math

import keras
import pytest
import tensorflow as tf

from towertrain import Params, Trainer, models

_DEEP_VARIANTS = {f"resnet{d}{v}" for d in (32, 44, 56, 110) for v in ("", "_v2")} | {
    "resnet101", "resnet152", "vgg16", "vgg19"}


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
        if name in _DEEP_VARIANTS:
            yield pytest.param(name, 1, "NHWC", marks=pytest.mark.slow,
                               id=f"{name}-1dev-NHWC")
            continue
        for num_devices, data_format in ((1, "NCHW"), (2, "NHWC")):
            yield pytest.param(name, num_devices, data_format,
                               id=f"{name}-{num_devices}dev-{data_format}")


@pytest.mark.parametrize("name,num_devices,data_format", list(_cases()))
def test_one_training_step(name, num_devices, data_format):
    spec = models.get_spec(name)
    num_classes = models.DATASET_CLASSES[spec.default_dataset]
    model = models.build(name, num_classes=num_classes, data_format=data_format,
                         image_size=max(32, spec.min_image_size))
    params = Params(model=name, device="cpu", num_gpus=num_devices, batch_size=1,
                    num_batches=1, num_warmup_batches=0, variable_update="replicated",
                    data_format=data_format)
    trainer = Trainer(params, model=model)
    loss = float(trainer.step())
    assert math.isfinite(loss) and loss > 0
    keras.backend.clear_session()
