"""What a step reports besides its loss: the named extras of a StepResult.

Always: 'input_wait_seconds' (the time the step spent waiting for its input:
until its batch was there, plus any time the staging put ran past the
compute), 'top1' (training accuracy of the step, classifiers only) and
'loss_scale' (with --use_fp16); multi-worker 'stop_requests' (workers asked
to stop, towertrain.callbacks.cluster_stop). On request: 'grad_norm' (global norm of the
all-reduced gradient) and 'gradients' (the summed gradients, for histograms).
Both are true gradients: with a loss-scaled transfer (--use_fp16
--compact_gradient_transfer) the towers hand over gradients still multiplied
by the loss scale, and they are divided by the step's scale here first.
"""
import tensorflow as tf

SCALARS, GRAD_NORM, GRADIENTS = 0, 1, 2


def levels(observe):
    """The output levels a run's step is traced for (summaries ask for more);
    observe: what the run writes (the plan's Outputs)."""
    if observe.summarizes_gradients:
        return (SCALARS, GRADIENTS)
    if observe.summaries_on:
        return (SCALARS, GRAD_NORM)
    return (SCALARS,)


def extras(results, loss_scale, all_finite, level, grad_scale=None):
    """In the step, on the CPU: the extra tensors, by name.

    grad_scale: the loss scale the towers' gradients are still multiplied by
    (the step's scale, read before the update changes it), or None when the
    towers unscaled them."""
    out = {}
    live = [r for r in results if r is not None]
    if live and live[0].correct is not None:
        out["top1_correct"] = tf.add_n([r.correct for r in live])
    if loss_scale:
        out["loss_scale"] = loss_scale.update(all_finite)
    if level >= GRAD_NORM:
        # The towers' gradients summed as the exchange sums them; on the CPU, so
        # the norm is the same whatever the variable-update mode.
        summed = [tf.add_n([r.grads[i] for r in live]) for i in range(len(live[0].grads))]
        if grad_scale is not None:
            summed = [g / tf.cast(grad_scale, g.dtype) for g in summed]
        out["grad_norm"] = tf.linalg.global_norm(summed)
        if level >= GRADIENTS:
            out["gradients"] = summed
    return out


def input_wait(clock, staged_put):
    """Seconds waiting for input, from in-graph timestamps: start -> batch
    ready, plus, when the step staged the next batch (staged_put), the put's
    overrun past the update. Without a put the time after the update is the
    step's own work (its last assignments, its outputs), never input."""
    wait = clock["ready"] - clock["start"]
    if not staged_put:
        return wait
    return wait + tf.maximum(clock["end"] - clock["computed"], 0.0)


# Multi-worker: every worker's (seconds to reach the exchange, input wait) of
# the step, [reach 0, wait 0, reach 1, wait 1, ...], gathered in the step's
# tail (towertrain.engine.exchange.tail.timing_values); the straggler report
# reads it (towertrain.callbacks.straggler_report).
WORKER_TIMING = "worker_timing"


def to_python(extras):
    """Tensors -> Python numbers (numpy arrays for gradients); 'top1_correct' is
    left as a count for the caller to divide by the step's examples."""
    out = {}
    for name, value in extras.items():
        if name == "gradients":
            out[name] = [g.numpy() for g in value]
        elif name == WORKER_TIMING:
            out[name] = [float(v) for v in value.numpy()]
        elif name in ("top1_correct", "stop_requests"):
            out[name] = int(value)
        else:
            out[name] = float(value)
    return out
