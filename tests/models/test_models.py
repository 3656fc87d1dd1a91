"""The model zoo: registry, parameter counts, both data formats agree.

Every model's parameter count is checked (against keras.applications, the
counts the literature quotes, or the CIFAR ResNet formula), which pins the
block and conv counts of the models that only repeat a builder with more
blocks (helpers.model_checkpoints.REPRESENTED_BY), and a separate test pins
resnet50_v1.5's stride placement, the one thing it does not share with
resnet50. So the data-format sweep runs one model per builder by default: the
copies run the same format-specific layer code. TOWERTRAIN_FULL_SWEEP=1 runs
every model.
"""
import keras
import numpy as np
import pytest

from towertrain import models
from towertrain.models import registry

from helpers.model_checkpoints import REPRESENTED_BY, copy_mark


def small_image_size(name):
    """Tests build at 32x32 or the model's minimum, so building and tracing are fast.

    Conv stacks have the same variables at any size; only flatten-fed dense
    kernels shrink.
    """
    return max(32, models.get_spec(name).min_image_size)

ISSUE_MODELS = ["trivial", "lenet", "cifar_cnn", "alexnet", "alexnet_cifar",
                "resnet50", "resnet50_v1.5", "resnet101", "resnet152", "inception3",
                "vgg11", "vgg16", "vgg19", "googlenet", "densenet40_k12"] + [
    f"resnet{d}{v}" for d in (20, 32, 44, 56, 110) for v in ("", "_v2")]


def test_issue_models_are_registered():
    assert set(ISSUE_MODELS) <= set(models.registered_names())


def test_unknown_name_lists_known_ones():
    with pytest.raises(ValueError, match="known models: .*resnet50"):
        models.build("resnet49")


def test_register_model_rejects_duplicates():
    with pytest.raises(ValueError, match="already registered"):
        models.register_model("resnet20", models.build_resnet_cifar_v1(20), 32, 64)


# keras.applications is the reference: built with weights=None at the same
# image size with 1000 classes, plus published parameter counts.
APPLICATION_COUNTS = [
    ("resnet50", "ResNet50", 224, 25_636_712),
    ("resnet50_v1.5", "ResNet50", 224, 25_636_712),
    ("inception3", "InceptionV3", 299, 23_851_784),
    ("vgg16", "VGG16", 224, 138_357_544),
]


@pytest.mark.parametrize("name,application,image_size,expected", APPLICATION_COUNTS)
def test_param_count_matches_keras_applications(name, application, image_size, expected):
    ours = models.build(name, num_classes=1000, image_size=image_size)
    assert ours.count_params() == expected
    reference = getattr(keras.applications, application)(
        weights=None, input_shape=(image_size, image_size, 3), classes=1000)
    assert ours.count_params() == reference.count_params()
    keras.backend.clear_session()


def _cifar_resnet_params(depth, num_classes=10):
    """He et al.'s CIFAR ResNet with 1x1 projections, v1 or v2 alike: 3x3 convs
    without bias, a 1x1 projection where the width changes, 4 numbers per batch
    norm channel (one per conv in v1 plus the stem's; v2 has the same total)."""
    blocks = (depth - 2) // 6
    convs, bn_channels, width = 3 * 3 * 3 * 16, 16, 16
    for filters in (16, 32, 64):
        for _ in range(blocks):
            convs += 9 * width * filters + 9 * filters * filters
            convs += width * filters if width != filters else 0
            bn_channels += 2 * filters
            width = filters
    return convs + 4 * bn_channels + 64 * num_classes + num_classes


KNOWN_COUNTS = [
    ("cifar_cnn", 1_250_858),
    ("resnet101", 44_707_176),  # keras.applications.ResNet101
    ("resnet152", 60_419_944),  # keras.applications.ResNet152
    ("vgg11", 132_863_336),  # torchvision's vgg11 (configuration A, no batch norm)
    ("vgg19", 143_667_240),  # keras.applications.VGG19
] + [(f"resnet{depth}{v}", _cifar_resnet_params(depth))
     for depth in (20, 32, 44, 56, 110) for v in ("", "_v2")]


@pytest.mark.parametrize("name,expected", KNOWN_COUNTS)
def test_param_count_known(name, expected):
    spec = models.get_spec(name)
    classes = models.DATASET_CLASSES[spec.default_dataset]
    assert models.build(name, num_classes=classes).count_params() == expected
    keras.backend.clear_session()


def test_every_repeated_builder_has_its_param_count_checked():
    """A copy left out of the default format and training sweeps keeps a count check."""
    counted = {name for name, _ in KNOWN_COUNTS} | {name for name, *_ in APPLICATION_COUNTS}
    assert set(REPRESENTED_BY) <= counted


def test_resnet50_v1_5_strides_the_3x3_conv():
    """v1 downsamples in a block's first 1x1 conv, v1.5 in its 3x3 (tf_cnn_benchmarks)."""
    for name, strided, unstrided in (("resnet50", "1", "2"), ("resnet50_v1.5", "2", "1")):
        model = models.build(name, num_classes=10, image_size=32)
        for stage in (3, 4, 5):
            block = f"stage{stage}_block1"
            assert model.get_layer(f"{block}_{strided}_conv").strides == (2, 2), (name, block)
            assert model.get_layer(f"{block}_{unstrided}_conv").strides == (1, 1), (name, block)
        keras.backend.clear_session()


def test_weight_decay_skips_batch_norm_and_biases():
    model = models.build("resnet20_v2", num_classes=10)
    decayed = models.weight_decay_variables(model, "resnet20_v2")
    assert decayed and all(v.path.endswith("kernel") for v in decayed)
    kernels = [v for v in model.trainable_variables if v.path.endswith("kernel")]
    assert len(decayed) == len(kernels)  # every conv and the dense kernel
    mask = models.weight_decay_mask(model, "resnet20_v2")
    assert len(mask) == len(model.trainable_variables)
    assert sum(mask) == len(decayed)
    vgg = models.build("vgg11", num_classes=10, image_size=32)
    assert not any("bias" in v.path for v in models.weight_decay_variables(vgg))


def test_weight_decay_filter_is_per_model(monkeypatch):
    # A private copy of the registry, so the extra name does not leak to other tests.
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    only_dense = lambda v: v.path == "logits/kernel"  # noqa: E731
    models.register_model("resnet20_dense_decay", models.build_resnet_cifar_v1(20), 32, 64,
                          default_dataset="cifar10", weight_decay_filter=only_dense)
    model = models.build("resnet20_dense_decay")
    assert [v.path for v in models.weight_decay_variables(model, "resnet20_dense_decay")] \
        == ["logits/kernel"]


def _copy_weights(source, target):
    assert len(source.weights) == len(target.weights)
    for s, t in zip(source.weights, target.weights):
        assert s.path == t.path and s.shape == t.shape, (s.path, t.path)
        t.assign(s)


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=copy_mark(name)) if name in REPRESENTED_BY else name
    for name in models.registered_names()])
def test_both_formats_build_and_agree(name):
    """Builds NCHW and NHWC at a small size; NCHW weights in NHWC give the same logits."""
    size = small_image_size(name)
    nchw = models.build(name, num_classes=7, data_format="NCHW", image_size=size)
    nhwc = models.build(name, num_classes=7, data_format="NHWC", image_size=size)
    _copy_weights(nchw, nhwc)
    x = np.random.RandomState(0).uniform(-1, 1, (2, 3, size, size)).astype("float32")
    out_nchw = np.asarray(nchw(x, training=False))
    out_nhwc = np.asarray(nhwc(x.transpose(0, 2, 3, 1), training=False))
    assert out_nchw.shape == out_nhwc.shape == (2, 7)
    assert np.all(np.isfinite(out_nchw))
    # 1e-5 relative to the logits' scale: untrained ImageNet ResNets reach
    # logits in the hundreds (BN is the identity in inference at init, so
    # residual sums grow), where float32 round-off alone exceeds 1e-5 absolute.
    scale = max(1.0, float(np.abs(out_nchw).max()))
    assert np.abs(out_nhwc - out_nchw).max() <= 1e-5 * scale
    keras.backend.clear_session()


@pytest.mark.parametrize("name", ["resnet20", "resnet20_v2", "densenet40_k12"])
def test_formats_agree_in_training_mode(name):
    """Batch statistics and moving-stat updates agree across formats too."""
    nchw = models.build(name, num_classes=10, data_format="NCHW")
    nhwc = models.build(name, num_classes=10, data_format="NHWC")
    _copy_weights(nchw, nhwc)
    x = np.random.RandomState(0).uniform(-1, 1, (4, 3, 32, 32)).astype("float32")
    np.testing.assert_allclose(nhwc(x.transpose(0, 2, 3, 1), training=True),
                               nchw(x, training=True), rtol=1e-5, atol=1e-5)
    for a, b in zip(nchw.non_trainable_weights, nhwc.non_trainable_weights):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-5)


def test_too_small_image_is_a_clear_error():
    with pytest.raises(ValueError, match="inception3.*at least 75x75"):
        models.build("inception3", image_size=64)
