"""The CIFAR ResNets' parameter-free shortcut (shortcut="pad", He et al. 2015
option A, tf_cnn_benchmarks' network): the identity subsampled by the stride
and zero-padded to the new width, against numpy; no shortcut variables."""
import numpy as np
import pytest

from towertrain import models
from towertrain.models.layers import ChannelZeroPad
from towertrain.models.resnet_cifar import _widening_shortcut, build_resnet_cifar


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_the_shortcut_is_the_subsampled_input_with_zero_channels(data_format):
    rng = np.random.default_rng(0)
    nhwc = rng.standard_normal((2, 7, 6, 16)).astype(np.float32)
    x = nhwc if data_format == "channels_last" else nhwc.transpose(0, 3, 1, 2)
    out = np.asarray(_widening_shortcut(x, 32, 2, data_format, "b", "pad"))
    if data_format == "channels_first":
        out = out.transpose(0, 2, 3, 1)
    expected = np.pad(nhwc[:, ::2, ::2, :], [(0, 0), (0, 0), (0, 0), (8, 8)])
    np.testing.assert_array_equal(out, expected)


def test_uneven_widening_puts_the_extra_channel_after():
    x = np.ones((1, 2, 2, 3), np.float32)
    out = np.asarray(ChannelZeroPad("channels_last", 1, 2)(x))
    assert out.shape == (1, 2, 2, 6)
    np.testing.assert_array_equal(out[0, 0, 0], [0, 1, 1, 1, 0, 0])
    assert ChannelZeroPad.from_config(ChannelZeroPad("channels_last", 1, 2).get_config()).after == 2


@pytest.mark.parametrize("version", [1, 2])
def test_pad_resnet20_drops_exactly_the_projection_kernels(version):
    projection = build_resnet_cifar(20, version)(10, "channels_last", 32)
    pad = build_resnet_cifar(20, version, shortcut="pad")(10, "channels_last", 32)
    assert pad.name == f"resnet20{'' if version == 1 else '_v2'}_pad"
    # The two stage changes' 1x1 kernels: 16x32 and 32x64.
    assert projection.count_params() - pad.count_params() == 16 * 32 + 32 * 64
    assert not [w for w in pad.weights if "_proj" in w.path]
    if version == 1:
        # 19 conv kernels (432 + 6 x 2,304 + 4,608 + 5 x 9,216 + 18,432 +
        # 5 x 36,864), 19 batch norms over 688 channels x 4, logits 650.
        assert pad.count_params() == 267_696 + 688 * 4 + 650
    out = pad(np.zeros((2, 32, 32, 3), np.float32))
    assert out.shape == (2, 10)


def test_the_registered_resnets_keep_the_projection_and_bad_kinds_are_refused():
    model = models.build("resnet20", num_classes=10)
    assert [w for w in model.weights if "_proj" in w.path]
    with pytest.raises(ValueError, match="shortcut must be one of"):
        build_resnet_cifar(20, shortcut="identity")
