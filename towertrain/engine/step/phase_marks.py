"""The step's phase, marked on the host as the step runs: what the step
watchdog (towertrain.engine.run.watchdog) names if a step hangs.

One CPU int32 variable; each mark is an assign that waits for the tensors
the phase starts from. tf.group joins each device's tensors in one op there,
so a device crosses to the host once per mark; nothing waits for a mark but
the step's end, which already waits for the exchange.
"""
import tensorflow as tf


class PhaseMarks:
    """`enter(phase, after)` inside the step function; `variable` is what the
    watchdog reads (watchdog.mark(..., variable))."""

    def __init__(self):
        with tf.device("/cpu:0"):
            self.variable = tf.Variable(0, dtype=tf.int32, trainable=False, name="step_phase")

    def enter(self, phase, after=()):
        """Marks the step as in `phase` once the tensors in `after` are computed."""
        tensors = [t for t in tf.nest.flatten(after, expand_composites=True)
                   if isinstance(t, tf.Tensor)]
        with tf.device("/cpu:0"), tf.control_dependencies(
                [tf.group(*tensors)] if tensors else []):
            self.variable.assign(phase)
