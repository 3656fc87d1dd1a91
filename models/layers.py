"""Layers shared by the model definitions."""
import keras
import tensorflow as tf


class FusedBatchNormalization(keras.layers.Layer):
    """Batch norm on TensorFlow's fused kernel, for 4-D conv activations.

    Same variables and semantics as keras.layers.BatchNormalization (gamma,
    beta, moving_mean, moving_variance; moving stats updated with the biased
    batch variance; center/scale switch beta/gamma off), but one fused op
    forward and backward: Keras 3's own layer is unfused in the TF backend and
    measured ~1.3x slower on resnet20 here.

    `cross_tower_moments`: None, or a callable (inputs, axes) -> (mean,
    variance) over every tower's slice, or None when the call is not part of
    a multi-tower step. towertrain's engine installs it for --sync_batch_norm
    (towertrain.engine.step.sync_batch_norm.attach); the layer knows nothing of towers.
    """

    cross_tower_moments = None

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 **kwargs):
        super().__init__(**kwargs)
        self.axis = axis
        self.momentum = momentum
        self.epsilon = epsilon
        self.center = center
        self.scale = scale

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{self.name}: FusedBatchNormalization needs 4-D input, "
                             f"got shape {input_shape}")
        axis = self.axis % 4
        if axis not in (1, 3):
            raise ValueError(f"{self.name}: axis must be the channel axis 1 or 3")
        self._channel_axis = axis
        self._tf_format = "NCHW" if axis == 1 else "NHWC"
        channels = input_shape[axis]
        self._channels = channels
        # Variables are created in Keras' order (gamma, beta, mean, variance)
        # so weight lists line up with keras.layers.BatchNormalization. They
        # stay float32 under a mixed policy (autocast=False, dtype="float32"): the fused kernel
        # takes float16/bfloat16 activations with float32 parameters and
        # statistics, which keeps the moving averages exact. dtype float32 also
        # under a float16 policy (--fp16_vars), as tf_cnn_benchmarks' batch norm.
        self.gamma = (self.add_weight(shape=(channels,), initializer="ones", name="gamma",
                                      autocast=False, dtype="float32") if self.scale else None)
        self.beta = (self.add_weight(shape=(channels,), initializer="zeros", name="beta",
                                     autocast=False, dtype="float32") if self.center else None)
        self.moving_mean = self.add_weight(shape=(channels,), initializer="zeros",
                                           name="moving_mean", trainable=False,
                                           autocast=False, dtype="float32")
        self.moving_variance = self.add_weight(shape=(channels,), initializer="ones",
                                               name="moving_variance", trainable=False,
                                               autocast=False, dtype="float32")

    def _scale_offset(self):
        # The fused kernel always takes scale and offset; constants stand in
        # for the variables a center=False / scale=False layer does not have.
        gamma = self.gamma if self.scale else tf.ones((self._channels,), tf.float32)
        beta = self.beta if self.center else tf.zeros((self._channels,), tf.float32)
        return tf.convert_to_tensor(gamma), tf.convert_to_tensor(beta)

    def call(self, inputs, training=False):
        gamma, beta = self._scale_offset()
        if training and self.cross_tower_moments is not None:
            axes = [a for a in range(4) if a != self._channel_axis]
            moments = self.cross_tower_moments(inputs, axes)
            if moments is not None:  # --sync_batch_norm: statistics of the global batch
                return self._call_synchronized(inputs, gamma, beta, *moments)
        if not training:
            outputs, _, _ = tf.compat.v1.nn.fused_batch_norm(
                inputs, gamma, beta, mean=tf.convert_to_tensor(self.moving_mean),
                variance=tf.convert_to_tensor(self.moving_variance), epsilon=self.epsilon,
                data_format=self._tf_format, is_training=False)
            return outputs
        outputs, mean, unbiased_variance = tf.compat.v1.nn.fused_batch_norm(
            inputs, gamma, beta, epsilon=self.epsilon,
            data_format=self._tf_format, is_training=True)
        # The fused kernel returns the Bessel-corrected variance; Keras averages
        # the biased one, so undo the correction to keep identical moving stats.
        if inputs.shape.is_fully_defined():  # the usual case: a constant, no extra ops
            count = inputs.shape.num_elements() // inputs.shape[self._channel_axis]
            variance = unbiased_variance * ((count - 1.0) / max(count, 1.0))
        else:
            shape = tf.shape(inputs)
            count = tf.cast(tf.size(inputs) // shape[self._channel_axis], tf.float32)
            variance = unbiased_variance * (count - 1.0) / tf.maximum(count, 1.0)
        self.moving_mean.assign(self.moving_mean * self.momentum + mean * (1.0 - self.momentum))
        self.moving_variance.assign(
            self.moving_variance * self.momentum + variance * (1.0 - self.momentum))
        return outputs

    def _call_synchronized(self, inputs, gamma, beta, mean, variance):
        """Normalizes with the float32 mean and biased variance over every
        tower's slice, and averages those into the moving statistics exactly as
        the fused path does for one batch."""
        shape = [1, -1, 1, 1] if self._channel_axis == 1 else [1, 1, 1, -1]
        outputs = tf.nn.batch_normalization(
            tf.cast(inputs, tf.float32), tf.reshape(mean, shape), tf.reshape(variance, shape),
            tf.reshape(beta, shape), tf.reshape(gamma, shape), self.epsilon)
        self.moving_mean.assign(self.moving_mean * self.momentum + mean * (1.0 - self.momentum))
        self.moving_variance.assign(
            self.moving_variance * self.momentum + variance * (1.0 - self.momentum))
        return tf.cast(outputs, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(axis=self.axis, momentum=self.momentum, epsilon=self.epsilon,
                      center=self.center, scale=self.scale)
        return config


class LocalResponseNormalization(keras.layers.Layer):
    """tf.nn.local_response_normalization across channels, in either data format.

    TF's LRN kernel only takes NHWC, so channels_first input is transposed
    around it (AlexNet's CIFAR variant is the only user; it has no variables).
    """

    def __init__(self, data_format, depth_radius=4, bias=1.0, alpha=0.001 / 9.0,
                 beta=0.75, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format
        self.depth_radius = depth_radius
        self.bias = bias
        self.alpha = alpha
        self.beta = beta

    def call(self, inputs):
        x = inputs
        if self.data_format == "channels_first":
            x = tf.transpose(x, [0, 2, 3, 1])
        x = tf.nn.local_response_normalization(x, self.depth_radius, self.bias,
                                               self.alpha, self.beta)
        if self.data_format == "channels_first":
            x = tf.transpose(x, [0, 3, 1, 2])
        return x

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(data_format=self.data_format, depth_radius=self.depth_radius,
                      bias=self.bias, alpha=self.alpha, beta=self.beta)
        return config


class ChannelZeroPad(keras.layers.Layer):
    """Zero channels added on both sides of the channel axis (`before` and
    `after` of them): the parameter-free shortcut of He et al. 2015 (option A)
    widens the identity this way where a stage doubles the filters."""

    def __init__(self, data_format, before, after, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format
        self.before = before
        self.after = after

    def call(self, inputs):
        pads = [[0, 0]] * 4
        pads[channel_axis(self.data_format)] = [self.before, self.after]
        return tf.pad(inputs, pads)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        axis = channel_axis(self.data_format)
        shape[axis] = shape[axis] + self.before + self.after
        return tuple(shape)

    def get_config(self):
        config = super().get_config()
        config.update(data_format=self.data_format, before=self.before, after=self.after)
        return config


def batch_norm(data_format, name=None, **kwargs):
    """The batch norm the model zoo uses, on the channel axis of data_format."""
    return FusedBatchNormalization(axis=1 if data_format == "channels_first" else -1,
                                   name=name, **kwargs)


def channel_axis(data_format):
    return 1 if data_format == "channels_first" else -1


def conv2d(filters, kernel, data_format, name, strides=1, padding="same", use_bias=True,
           activation=None, kernel_initializer="glorot_uniform"):
    """A Conv2D in the model's data format (kernels are HWIO either way)."""
    return keras.layers.Conv2D(filters, kernel, strides=strides, padding=padding,
                               use_bias=use_bias, activation=activation,
                               kernel_initializer=kernel_initializer,
                               data_format=data_format, name=name)


def conv_bn_relu(x, filters, kernel, data_format, name, strides=1, padding="same",
                 use_bias=False, scale=True, epsilon=1e-3, relu=True):
    """conv -> fused batch norm -> relu, the block most of the zoo is made of."""
    x = conv2d(filters, kernel, data_format, f"{name}_conv", strides=strides,
               padding=padding, use_bias=use_bias)(x)
    x = batch_norm(data_format, name=f"{name}_bn", scale=scale, epsilon=epsilon)(x)
    if relu:
        x = keras.layers.Activation("relu", name=f"{name}_relu")(x)
    return x
