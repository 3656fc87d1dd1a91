"""The step's clock: the in-graph times the input-wait share is measured from
(step_outputs.input_wait), every one taken on the CPU (TensorFlow's Timestamp
has a CPU kernel only: placed on a GPU with soft placement off, the step
fails to start).

tf.function runs a function's stateful ops that take no resource in program
order (automatic control dependencies): a timestamp is one, and so is the
staging put, built before the towers. The time the update was done must
follow every device's update and nothing else: a timestamp built in the step
itself would also wait for the put, and a put running past the update would
show no wait. So that time is taken in a call of its own, which writes it to a
CPU variable: a call that takes a resource is ordered by its control inputs
and that variable's other uses alone.

Under op determinism TensorFlow refuses timestamps: untimed, every time is 0
and the step reports no wait (never a made-up one).
"""
import tensorflow as tf


class StepClock:
    """now(): a time taken where the step builds it; after(tensors): the time
    once every tensor in `tensors` is computed (each device's update flag)."""

    def __init__(self):
        with tf.device("/cpu:0"):
            self.update_done_at = tf.Variable(0.0, dtype=tf.float64, trainable=False,
                                              name="update_done_at")
        self._stamp_after = tf.function(self._stamp, autograph=False)

    def _stamp(self):
        self.update_done_at.assign(tf.timestamp())
        return self.update_done_at.read_value()

    @staticmethod
    def now(timed=True):
        with tf.device("/cpu:0"):
            return tf.timestamp() if timed else tf.constant(0.0, tf.float64)

    def after(self, tensors, timed=True):
        with tf.device("/cpu:0"), tf.control_dependencies(list(tensors)):
            return self._stamp_after() if timed else tf.constant(0.0, tf.float64)
