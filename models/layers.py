"""Layers shared by the model definitions."""
import keras
import tensorflow as tf


class FusedBatchNormalization(keras.layers.Layer):
    """Batch norm on TensorFlow's fused kernel, for 4-D conv activations.

    Same variables and semantics as keras.layers.BatchNormalization (gamma,
    beta, moving_mean, moving_variance; moving stats updated with the biased
    batch variance), but one fused op forward and backward: Keras 3's own layer
    is unfused in the TF backend and measured ~1.3x slower on resnet20 here.
    """

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis
        self.momentum = momentum
        self.epsilon = epsilon

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{self.name}: FusedBatchNormalization needs 4-D input, "
                             f"got shape {input_shape}")
        axis = self.axis % 4
        if axis not in (1, 3):
            raise ValueError(f"{self.name}: axis must be the channel axis 1 or 3")
        self._tf_format = "NCHW" if axis == 1 else "NHWC"
        channels = input_shape[axis]
        self.gamma = self.add_weight(shape=(channels,), initializer="ones", name="gamma")
        self.beta = self.add_weight(shape=(channels,), initializer="zeros", name="beta")
        self.moving_mean = self.add_weight(shape=(channels,), initializer="zeros",
                                           name="moving_mean", trainable=False)
        self.moving_variance = self.add_weight(shape=(channels,), initializer="ones",
                                               name="moving_variance", trainable=False)

    def call(self, inputs, training=False):
        if not training:
            outputs, _, _ = tf.compat.v1.nn.fused_batch_norm(
                inputs, self.gamma, self.beta, mean=self.moving_mean,
                variance=self.moving_variance, epsilon=self.epsilon,
                data_format=self._tf_format, is_training=False)
            return outputs
        outputs, mean, unbiased_variance = tf.compat.v1.nn.fused_batch_norm(
            inputs, self.gamma, self.beta, epsilon=self.epsilon,
            data_format=self._tf_format, is_training=True)
        # The fused kernel returns the Bessel-corrected variance; Keras averages
        # the biased one, so undo the correction to keep identical moving stats.
        shape = tf.shape(inputs)
        per_channel = tf.cast(tf.size(inputs) // shape[self.axis % 4], inputs.dtype)
        variance = unbiased_variance * (per_channel - 1.0) / tf.maximum(per_channel, 1.0)
        self.moving_mean.assign(self.moving_mean * self.momentum + mean * (1.0 - self.momentum))
        self.moving_variance.assign(
            self.moving_variance * self.momentum + variance * (1.0 - self.momentum))
        return outputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(axis=self.axis, momentum=self.momentum, epsilon=self.epsilon)
        return config


def batch_norm(data_format, name=None, **kwargs):
    """The batch norm the model zoo uses, on the channel axis of data_format."""
    return FusedBatchNormalization(axis=1 if data_format == "channels_first" else -1,
                                   name=name, **kwargs)
