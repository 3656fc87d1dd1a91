"""The weight-decay term and which loss a run reports (tf_cnn_benchmarks'
--single_l2_loss_op and --loss_type_to_report)."""
import collections

import tensorflow as tf

# single_op: one L2 loss over all decayed variables concatenated, instead of
# one per variable (a different graph, the same value up to rounding).
# report_base: the reported loss leaves the weight decay out; the gradients
# always include it.
LossOptions = collections.namedtuple("LossOptions", "single_op report_base",
                                     defaults=(False, False))


def from_plan(loss):
    return LossOptions(single_op=loss.single_l2_loss_op,
                       report_base=loss.loss_type_to_report == "base_loss")


def l2_loss(variables, single_op=False):
    """sum(v^2) / 2 over `variables` (float32)."""
    values = [tf.cast(v, tf.float32) for v in variables]
    if single_op:
        return tf.nn.l2_loss(tf.concat([tf.reshape(v, [-1]) for v in values], axis=0))
    return tf.add_n([tf.nn.l2_loss(v) for v in values])
