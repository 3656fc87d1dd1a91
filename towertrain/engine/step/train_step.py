"""The training step as one tf.function: towers, exchange, finite check, update.

Every tower runs under its device on its slice (in lockstep with the others
for --sync_batch_norm); then, if every loss and gradient is finite, the
variable manager exchanges gradients and applies one update. The step is
built from the parts it runs (model, devices, variables, feed, loss) and the
plan's values it needs, never from the trainer.
"""
import contextlib

import tensorflow as tf

from towertrain import private_api
from towertrain.engine.step import accumulate
from towertrain.engine.run import model_checks
from towertrain.engine.step import step_outputs
from towertrain.engine.step import tower
from towertrain.engine.step import towers as towers_lib
from towertrain.input_pipeline.arrays import InputError


@contextlib.contextmanager
def input_errors(input_source, staging, global_step):
    """Around running a step: keeps staging consistent after any failure, and
    turns a data error from a file-backed input into an InputError naming the
    data. global_step() -> the updates applied so far."""
    try:
        yield
    except BaseException as err:
        if staging is not None:
            staging.recover(global_step())
        if isinstance(err, (tf.errors.OutOfRangeError, tf.errors.CancelledError)):
            # A queue input whose feeder thread failed closes its queue: say why.
            input_source.raise_pending_error()
        elif isinstance(err, (tf.errors.InvalidArgumentError, tf.errors.DataLossError)):
            found = model_checks.error_from(err)
            if found is not None:
                raise found from err
            # Only an error of the input pipeline is the data's: a kernel's (a
            # layout an op lacks, a shape) is raised as it is.
            if input_source.description and from_input_pipeline(err):
                raise InputError(f"bad input data in {input_source.description}: "
                                 f"{err.message}") from err
        raise


def from_input_pipeline(err):
    """Whether a step's error arose in a tf.data iterator (where files are read
    and decoded): TensorFlow names the iterator's node ([[IteratorGetNext]],
    'with iterator: Iterator::...') in the message of such errors."""
    return "IteratorGetNext" in err.message or "Iterator::" in err.message


def _after(op, device, tensors):
    with tf.device(device), tf.control_dependencies([op]):
        return tuple(tf.identity(t) for t in tensors)


class TrainStep:
    """Builds the step function from the parts it runs. `fn(put, outputs)`
    returns (loss, global example count, applied, extras).

    feed: the run's engine.feed.position.Feed (its input and staging);
    exchange: the plan's Exchange section; loss_fn, decay_mask, loss,
    xla_compile, tower_indices, cluster_towers, seed: the towers'
    (engine/step/towers.py: seed, step and slot make every random draw);
    loss_scale: a recipe.precision.LossScale or None; accumulators: the
    per-device sums of --gradient_accumulation_steps, or None; nominal_batch:
    the global batch a micro-batch's loss is divided by (and, multi-worker,
    a whole step's: see _train_step); stop_request: this worker's stop flag
    (multi-worker); half_precision: the model computes in float16 or
    bfloat16; output_levels: the extras' levels to trace ahead of the first
    step (step_outputs.levels).
    """

    def __init__(self, model, devices, variables, feed, *, loss_fn, decay_mask, loss,
                 exchange, nominal_batch, xla_compile=False, loss_scale=None,
                 accumulators=None, num_workers=1, tower_indices=None, stop_request=None,
                 output_levels=(step_outputs.SCALARS,), cluster_towers=None, seed=0,
                 half_precision=False):
        self.devices, self.variables = list(devices), variables
        self.input, self.staging = feed.input, feed.staging
        self.loss_scale = loss_scale
        self.num_workers = num_workers
        self.stop_request = stop_request
        # A half-precision transfer carries the loss-scaled gradients, unscaled
        # after the sum (as tf_cnn_benchmarks), so small ones survive float16.
        self.scaled_transfer = bool(self.loss_scale) and exchange.compact_gradient_transfer
        self.towers = towers_lib.Towers(
            model, self.devices, variables, loss_fn, decay_mask, loss,
            lockstep=exchange.sync_batch_norm, xla_compile=xla_compile,
            tower_indices=tower_indices, unscale=not self.scaled_transfer,
            cluster_towers=cluster_towers, seed=seed)
        self.count_correct = self.towers.count_correct
        # --gradient_accumulation_steps: the per-device sums between an
        # update's micro-batches, and the loss denominator of one micro-batch
        # (the global batch; the update's true count rescales at the end).
        self.accumulators = accumulators
        self.nominal = nominal_batch
        # Multi-worker, a whole step's loss is divided by the nominal global
        # batch too, and the example count travels in the tail's one scalar
        # collective: none runs before the towers. Not in half precision: the
        # backward pass rounds the gradient of a loss scaled otherwise in
        # float16/bfloat16 (relative 2**-11 / 2**-8 per op), so an uneven step
        # would differ from one divided by its count by far more than 1e-5;
        # there the count is summed before the towers, as in one process.
        self.fold_count = num_workers > 1 and not half_precision
        self.fn = tf.function(self._train_step)
        if self.staging is not None:
            # Steps before a fence or the end only drain (put=False). Trace that
            # variant now (tracing on first use took ~100 ms of a step); its
            # first call still builds it (1.4-1.9 s for resnet20 on 2 CPU
            # devices), which Feed.begin moves into warm-up.
            phases = ([accumulate.WHOLE] if self.accumulators is None
                      else [accumulate.ACCUMULATE, accumulate.APPLY])
            for put in (True, False):
                for phase in phases:
                    for outputs in (output_levels if phase != accumulate.ACCUMULATE else (0,)):
                        self.fn.get_concrete_function(put, outputs, phase)

    def _train_step(self, put=True, outputs=0, phase=accumulate.WHOLE):
        """One step. outputs: 0 the usual scalars; 1 also the global norm of the
        all-reduced gradient; 2 also the summed gradients (histograms).
        phase (engine/step/accumulate.py): WHOLE computes and applies one global
        batch; with accumulation, ACCUMULATE adds a micro-batch to the
        accumulators (no exchange, no update), APPLY adds the last one, then
        exchanges and applies the update."""
        # Timestamps measure the input wait; TensorFlow refuses them under op
        # determinism, and then the wait is not reported (never a made-up 0).
        timed = not private_api.op_determinism_enabled()
        now = tf.timestamp if timed else lambda: tf.constant(0.0, tf.float64)
        clock = {"start": now()}

        def got(batches):  # in program order before any put: see StagedInput
            with tf.control_dependencies([t for batch in batches for t in batch]):
                clock["ready"] = now()

        if self.staging is not None:
            batches = self.staging.tower_batches(self.devices, put=put, after_get=got)
        else:
            batches = self.input.tower_batches(self.devices)
            got(batches)
        # The towers start after the "ready" timestamp, so it cannot run late
        # (seen: a compute-bound step reporting input wait).
        if timed:
            batches = [_after(clock["ready"], device, batch)
                       for device, batch in zip(self.devices, batches)]
        synchronous = self.variables.synchronous
        with tf.device("/cpu:0"):
            local_count = global_count = tf.add_n([tf.shape(images)[0] for images, _ in batches])
            stop_requests = None
            # Whether the update's count is summed in the tail (else: before the towers).
            count_in_tail = self.num_workers > 1 and (phase != accumulate.WHOLE
                                                       or self.fold_count)
            if phase != accumulate.WHOLE or self.fold_count:
                # The loss is divided by the nominal global batch (no exchange for
                # the count before the towers); the update rescales by nominal / count.
                denominator = tf.constant(self.nominal)
            elif self.num_workers > 1:  # examples on every worker's towers, ahead
                global_count, stop_requests = self._cluster_count_and_stop(local_count)
                denominator = global_count
            else:
                denominator = global_count
            loss_scale = self.loss_scale.value() if self.loss_scale else None
            # Where the draws are: the updates applied so far, the micro-batch.
            step = tf.convert_to_tensor(self.variables.iterations())
            micro_batch = (self.accumulators.micro_batch.read_value()
                           if phase != accumulate.WHOLE else 0)
        # Where the exchange sums, the sum is checked (below) and the towers
        # check only their losses; a micro-batch's gradients are not summed yet.
        sums_checked = self.variables.exchange_sums and phase != accumulate.ACCUMULATE
        results, finite = self.towers.compute(batches, denominator, loss_scale, step,
                                              micro_batch, check_gradients=not sums_checked)
        if phase == accumulate.ACCUMULATE:
            return self._accumulate(results, finite, local_count, clock, timed, now,
                                    staged_put=self.staging is not None and put)
        update_loss = update_correct = None
        if phase == accumulate.APPLY:
            (results, global_count, update_loss, update_correct,
             finite) = self._take_update(results, finite, local_count, sums_checked)
        # Outside the finite check's branch: a branch waits for all its inputs,
        # while here each gradient pack's exchange starts once its gradients exist.
        grads = self.variables.exchange([r.grads if r else None for r in results],
                                        [r.non_trainable if r else None for r in results])
        if sums_checked:
            # A sum holds a NaN or an infinity of any tower's gradient (and an
            # overflow of finite ones), and every device holds the same sum.
            with tf.device(self.devices[0]):
                finite = finite + [tower.gradients_finite(grads.per_device[0])]
        with tf.device("/cpu:0"):
            all_finite = tf.reduce_all(tf.stack(finite))
            losses = [r.loss for r in results if r is not None]
            total = update_loss if update_loss is not None else tf.add_n(losses)
            # What the exchanged gradients are still multiplied by, divided out
            # in the update: the loss scale of a half-precision transfer, and
            # count / nominal where the count came in the tail.
            grad_scale = loss_scale if self.scaled_transfer else None
            if self.num_workers > 1:
                # Every worker takes the same branch, and reports the loss over
                # every worker's towers: one collective beside the packs.
                all_finite, total, count, stops = self.variables.cluster_tail(
                    all_finite, total, global_count if count_in_tail else 0,
                    self.stop_request.read_value() if count_in_tail else 0)
                if count_in_tail:
                    global_count, stop_requests = count, stops
                    share = tf.cast(count, tf.float32) / tf.cast(self.nominal, tf.float32)
                    total = total / share
                    grad_scale = share if grad_scale is None else grad_scale * share
                    # No examples anywhere: nothing to apply (nominal / 0).
                    all_finite = tf.logical_and(all_finite, count > 0)

        def update():
            scale = {"grad_scale": grad_scale} if grad_scale is not None else {}
            with private_api.forget_custom_gradients():  # else each trace leaks its graph
                applied = self.variables.apply(grads,
                                               [r.non_trainable if r else None for r in results],
                                               **scale)
            return now(), tf.constant(True) if applied is None else applied

        # A non-finite loss or gradient anywhere applies nothing, on every copy:
        # the decision is one boolean, so replicas cannot diverge. The branches
        # return the time the update was done: a timestamp inside the cond is
        # not chained after the staging put, so the put's overrun shows.
        clock["computed"], applied = tf.cond(
            all_finite, update, lambda: (now(), tf.constant(False)))
        with tf.device("/cpu:0"):
            extras = step_outputs.extras(
                results, self.loss_scale, applied, outputs,
                grad_scale=grad_scale)
            if update_correct is not None:
                extras["top1_correct"] = update_correct
            with tf.control_dependencies([clock["computed"]]):
                clock["end"] = now()
            if timed:
                extras["input_wait_seconds"] = step_outputs.input_wait(
                    clock, staged_put=self.staging is not None and put)
            if stop_requests is not None:
                extras["stop_requests"] = stop_requests
            if update_loss is not None:
                return total, global_count, applied, extras
            loss = total if synchronous else total / len(losses)
            return loss, global_count, applied, extras

    def _local_sums(self, results, finite):
        """On the CPU: this micro-batch's summed loss, top-1 count (None: not a
        classifier) and whether every tower's loss and gradients are finite."""
        with tf.device("/cpu:0"):
            live = [r for r in results if r is not None]
            correct = tf.add_n([r.correct for r in live]) if self.count_correct else None
            return tf.add_n([r.loss for r in live]), correct, tf.reduce_all(tf.stack(finite))

    def _accumulate(self, results, finite, local_count, clock, timed, now, staged_put):
        """ACCUMULATE: adds the micro-batch to the accumulators and keeps its
        batch-norm statistics; returns (loss, local examples, finite, extras)."""
        loss, correct, all_finite = self._local_sums(results, finite)
        done = self.accumulators.add(results, local_count, loss, correct, all_finite)
        accumulate.keep_statistics(self.variables, results)
        with tf.device("/cpu:0"):
            with tf.control_dependencies(done):
                clock["computed"] = now()
                clock["end"] = now()
            extras = ({"input_wait_seconds": step_outputs.input_wait(clock, staged_put)}
                      if timed else {})
            return loss, local_count, all_finite, extras

    def _take_update(self, results, finite, local_count, sums_checked=False):
        """APPLY: the update's results from the accumulators plus this last
        micro-batch. Returns (per-tower results carrying the update's
        gradients, the update's examples, its loss, its top-1 count, per-tower
        finite flags). The micro-batches' losses were divided by the nominal
        global batch: nominal / count makes both the mean over the update's
        examples, so a partial last batch weighs what it holds. One worker
        knows its count here and rescales before the exchange (every manager);
        several learn it in the step's tail, which rescales after the
        exchange (examples, loss and gradients returned unscaled and local)."""
        loss, correct, all_finite = self._local_sums(results, finite)
        grads, count, loss, correct, all_finite = self.accumulators.take(
            results, local_count, loss, correct, all_finite)
        ratio = None
        if self.num_workers == 1:
            with tf.device("/cpu:0"):
                ratio = tf.cast(self.nominal, tf.float32) / tf.cast(count, tf.float32)
                loss = loss * ratio
        combined, finite = [], [all_finite]
        for i, device in enumerate(self.devices):
            with tf.device(device):
                scaled = ([g * tf.cast(ratio, g.dtype) for g in grads[i]] if ratio is not None
                          else grads[i])
                new_stats = results[i].non_trainable if results[i] is not None else None
                combined.append(tower.TowerResult(tf.constant(0.0), scaled, new_stats))
                if not sums_checked:  # else the step checks the exchanged sum
                    finite.append(tower.all_finite(combined[-1]))
        return combined, count, loss, correct, finite

    def _cluster_count_and_stop(self, count):
        """Multi-worker in half precision, before the towers: the examples over
        every worker, and how many workers asked to stop. The stop requests
        travel in the same collective as the count (one more value, no round
        trip), wherever the count goes: every worker learns of a preemption
        notice in the step (with accumulation, the update) it arrived in
        (towertrain.callbacks.cluster_stop)."""
        both = self.variables.cluster_count(
            tf.stack([count, self.stop_request.read_value()]))
        return both[0], both[1]
