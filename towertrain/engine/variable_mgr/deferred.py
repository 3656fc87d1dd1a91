"""--variable_consistency=relaxed: each copy applies the previous step's
all-reduced gradients (tf_cnn_benchmarks' deferred gradients).

Each device keeps the last sum in a variable. A step reads it, stores the new
sum and applies what it read, so the update does not wait for this step's
exchange: the all-reduce runs beside the update and the next step's compute.
The variables lag one step; the first step applies zeros (with sgd and
momentum, nothing), and the last sum is never applied. Checkpoints carry
the held sums (every copy holds the same bits, so one copy's), so a resumed
run applies what the interrupted one would have.
"""
import tensorflow as tf


class DeferredGradients:
    def __init__(self, copies, devices):
        """copies[i]: the trainable variables on devices[i]."""
        self.held = []
        for variables, device in zip(copies, devices):
            with tf.device(device):
                self.held.append([tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False,
                                              name="deferred_gradient") for v in variables])

    def swap(self, copy, grads):
        """The sums held for copy `copy` (the previous step's); holds `grads`."""
        previous = [tf.identity(v.read_value()) for v in self.held[copy]]
        with tf.control_dependencies(previous):  # read before the overwrite
            for variable, grad in zip(self.held[copy], grads):
                variable.assign(tf.cast(grad, variable.dtype))
        return previous

    def checkpoint_variables(self):
        """The first copy's held sums, by position in the trainable list."""
        return {f"deferred_gradient/{j}": v for j, v in enumerate(self.held[0])}

    def sync_copies(self):
        """Writes the first copy's held sums (just restored) into the others."""
        for held in self.held[1:]:
            for variable, source in zip(held, self.held[0]):
                variable.assign(source)
