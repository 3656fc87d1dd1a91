"""ImageNet ResNets with bottleneck blocks: resnet50/101/152 and resnet50_v1.5.

Layer for layer as keras.applications.ResNet50 (convs with biases, BN
epsilon 1.001e-5, projection shortcut on each stage's first block), so the
parameter counts match it exactly. v1 strides the first 1x1 conv of a
downsampling block; v1.5 strides the 3x3 instead (more accurate, as in
tf_cnn_benchmarks' resnet50_v1.5).
"""
import keras

from .layers import batch_norm, conv2d
from .registry import input_shape

_BN_EPSILON = 1.001e-5
_STAGE_BLOCKS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}


def _conv_bn(x, filters, kernel, strides, data_format, name, relu=True):
    x = conv2d(filters, kernel, data_format, f"{name}_conv", strides=strides,
               kernel_initializer="he_normal")(x)
    x = batch_norm(data_format, name=f"{name}_bn", epsilon=_BN_EPSILON)(x)
    if relu:
        x = keras.layers.Activation("relu", name=f"{name}_relu")(x)
    return x


def _bottleneck(x, filters, strides, project, v1_5, data_format, name):
    shortcut = x
    if project:
        shortcut = _conv_bn(x, 4 * filters, 1, strides, data_format, f"{name}_0", relu=False)
    y = _conv_bn(x, filters, 1, 1 if v1_5 else strides, data_format, f"{name}_1")
    y = _conv_bn(y, filters, 3, strides if v1_5 else 1, data_format, f"{name}_2")
    y = _conv_bn(y, 4 * filters, 1, 1, data_format, f"{name}_3", relu=False)
    y = keras.layers.Add(name=f"{name}_add")([shortcut, y])
    return keras.layers.Activation("relu", name=f"{name}_out")(y)


def build_resnet_imagenet(depth, v1_5=False):
    """The builder of an ImageNet bottleneck ResNet of depth 50, 101 or 152."""
    if depth not in _STAGE_BLOCKS:
        raise ValueError(f"ImageNet ResNet depth must be one of {sorted(_STAGE_BLOCKS)}")
    stage_blocks = _STAGE_BLOCKS[depth]

    def build(num_classes, data_format, image_size):
        inputs = keras.Input(input_shape(image_size, data_format))
        x = keras.layers.ZeroPadding2D(3, data_format=data_format, name="stem_pad")(inputs)
        x = conv2d(64, 7, data_format, "stem_conv", strides=2, padding="valid",
                   kernel_initializer="he_normal")(x)
        x = batch_norm(data_format, name="stem_bn", epsilon=_BN_EPSILON)(x)
        x = keras.layers.Activation("relu", name="stem_relu")(x)
        x = keras.layers.ZeroPadding2D(1, data_format=data_format, name="pool_pad")(x)
        x = keras.layers.MaxPooling2D(3, strides=2, data_format=data_format, name="stem_pool")(x)
        for stage, (blocks, filters) in enumerate(zip(stage_blocks, (64, 128, 256, 512))):
            for block in range(blocks):
                strides = 2 if stage > 0 and block == 0 else 1
                x = _bottleneck(x, filters, strides, block == 0, v1_5, data_format,
                                f"stage{stage + 2}_block{block + 1}")
        x = keras.layers.GlobalAveragePooling2D(data_format=data_format, name="pool")(x)
        outputs = keras.layers.Dense(num_classes, name="logits")(x)
        return keras.Model(inputs, outputs,
                           name=f"resnet{depth}" + ("_v1.5" if v1_5 else ""))

    return build
