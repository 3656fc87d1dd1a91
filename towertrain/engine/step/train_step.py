"""The training step as one tf.function: towers, exchange, update.

Every tower runs under its device on its slice (in lockstep with the others
for --sync_batch_norm); the variable manager's exchange sums the gradients
(and, in the last pack, the step's loss, examples and stop requests);
each copy applies the update only if its own copy of the sums is finite. The
step is built from the parts it runs (model, devices, variables, feed, loss)
and the plan's values it needs, never from the trainer.
"""
import collections
import contextlib
import functools

import tensorflow as tf

from towertrain import private_api
from towertrain import tf_errors
from towertrain.engine.exchange import tail as tail_lib
from towertrain.engine.step import accumulate, phase_marks, step_clock
from towertrain.engine.contract import in_step
from towertrain.engine.run import watchdog
from towertrain.engine.step import step_outputs
from towertrain.engine.step import tower
from towertrain.engine.step import towers as towers_lib
from towertrain.input_pipeline.arrays import InputError, label_check


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
            found = in_step.error_from(err)
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
    return (tf_errors.ITERATOR_NODE in err.message
            or tf_errors.ITERATOR_PIPELINE in err.message)


# The step's example counts: this process's, the update's denominator, the
# cluster's (None until the tail brings it), the stop requests known before
# the towers, and whether the count comes in the tail.
Counts = collections.namedtuple("Counts", "local denominator cluster stops in_tail")
# What the exchange and the update take: per-tower results (their gradients),
# the update's examples, loss and top-1 count where accumulation summed them.
Update = collections.namedtuple("Update", "results count loss correct finite")


def _after(op, device, tensors):
    with tf.device(device), tf.control_dependencies([op]):
        return tuple(tf.identity(t) for t in tensors)


class TrainStep:
    """Builds the step function from the parts it runs. `fn(put, outputs)`
    returns (loss, global example count, applied, extras).

    feed: the run's engine.feed.position.FeedPosition (its input and staging);
    exchange: the plan's Exchange section; loss_fn, decay_mask, loss,
    xla_compile, tower_indices, cluster_towers, seed: the towers'
    (engine/step/towers.py: seed, step and slot make every random draw);
    loss_scale: a recipe.precision.LossScale or None; accumulators: the
    per-device sums of --gradient_accumulation_steps, or None; nominal_batch:
    the global batch a micro-batch's loss is divided by (and, multi-worker,
    a whole step's: see _train_step); stop_request: this worker's stop flag
    (multi-worker); half_precision: the model computes in float16 or
    bfloat16; output_levels: the extras' levels to trace ahead of the first
    step (step_outputs.levels); label_check: (classes, the input's name)
    where each tower's labels are checked here (a user's Input subclass);
    report_timing: multi-worker, each worker's time to reach the exchange and
    input wait ride the step's tail (towertrain.callbacks.straggler_report).
    """

    def __init__(self, model, devices, variables, feed, *, loss_fn, decay_mask, loss,
                 exchange, nominal_batch, xla_compile=False, loss_scale=None,
                 accumulators=None, num_workers=1, tower_indices=None, stop_request=None,
                 output_levels=(step_outputs.SCALARS,), cluster_towers=None, seed=0,
                 half_precision=False, label_check=None, report_timing=True):
        self.devices, self.variables = list(devices), variables
        self.input, self.staging = feed.input, feed.staging
        self.loss_scale = loss_scale
        self.num_workers = num_workers
        # Each worker's timing in the step's tail, for the straggler report.
        self.report_timing = report_timing and num_workers > 1
        # This worker's task: its towers' global indices start at task x towers.
        self.task_index = tower_indices[0] // len(self.devices) if tower_indices else 0
        self.stop_request = stop_request
        self.label_check = label_check
        # A half-precision transfer carries the loss-scaled gradients, unscaled
        # after the sum (as tf_cnn_benchmarks), so small ones survive float16.
        self.scaled_transfer = bool(self.loss_scale) and exchange.compact_gradient_transfer
        self.towers = towers_lib.Towers(
            model, self.devices, variables, loss_fn, decay_mask, loss,
            lockstep=exchange.sync_batch_norm, xla_compile=xla_compile,
            tower_indices=tower_indices, unscale=not self.scaled_transfer,
            cluster_towers=cluster_towers, seed=seed,
            across=(variables.lockstep_sum
                    if exchange.sync_batch_norm and num_workers > 1 else None))
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
        # there the count is summed before the towers, as in one process. So
        # with gradients summed in half precision (--compact_gradient_transfer),
        # whose every add rounds so.
        self.fold_count = (num_workers > 1 and not half_precision
                           and not exchange.compact_gradient_transfer)
        self.marks = phase_marks.PhaseMarks()  # what the step watchdog names if it hangs
        self.clock = step_clock.StepClock()  # the times the input wait is measured from
        self.fn = tf.function(self._train_step, autograph=False)
        if self.staging is not None:
            # Steps before a fence or the end only drain (put=False). Trace that
            # variant now (tracing on first use took ~100 ms of a step); its
            # first call still builds it (1.4-1.9 s for resnet20 on 2 CPU
            # devices), which FeedPosition.begin moves into warm-up.
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
        now = functools.partial(self.clock.now, timed=timed)
        after = functools.partial(self.clock.after, timed=timed)
        self.marks.enter(watchdog.TOWERS)
        clock, batches = self._batches(put, timed, now)
        counts = self._counts(batches, phase)
        with tf.device("/cpu:0"):
            loss_scale = self.loss_scale.value() if self.loss_scale else None
            # Where the draws are: the updates applied so far, the micro-batch.
            step = tf.convert_to_tensor(self.variables.iterations())
            micro_batch = (self.accumulators.micro_batch.read_value()
                           if phase != accumulate.WHOLE else 0)
        # Where the exchange sums, each device checks its sums (loss included)
        # and the towers check nothing; a micro-batch's gradients are not summed yet.
        sums_checked = self.variables.exchange_sums and phase != accumulate.ACCUMULATE
        results, finite = self.towers.compute(batches, counts.denominator, loss_scale, step,
                                              micro_batch, check_gradients=not sums_checked)
        if phase == accumulate.ACCUMULATE:
            return self._accumulate(results, finite, counts.local, clock, timed, after,
                                    staged_put=self.staging is not None and put)
        update = self._update_of(results, finite, counts, phase, sums_checked)
        self.marks.enter(watchdog.EXCHANGE, [r.grads for r in update.results if r is not None])
        tail = self._tail_values(update, batches, counts) if sums_checked else None
        if tail is not None and timed and self.report_timing:
            tail.update(self._timing_values(update, clock, after))
        exchanged = self.variables.exchange([r.grads if r else None for r in update.results],
                                            [r.non_trainable if r else None
                                             for r in update.results], tail)
        self.marks.enter(watchdog.UPDATE, exchanged)
        grad_scale = loss_scale if self.scaled_transfer else None
        if sums_checked:
            exchanged, grad_scale, loss, count, stops = self._decide(
                exchanged, update, counts, grad_scale)
        else:
            loss, count, stops = self._local_loss(update), update.count, counts.stops
        applied, clock["computed"] = self._apply(exchanged, update, grad_scale, sums_checked,
                                                 after)
        with tf.device("/cpu:0"):
            extras = step_outputs.extras(
                update.results, self.loss_scale, applied, outputs,
                grad_scale=grad_scale[0] if isinstance(grad_scale, list) else grad_scale)
            if update.correct is not None:
                extras["top1_correct"] = update.correct
            with tf.control_dependencies([clock["computed"]]):
                clock["end"] = now()
            if timed:
                extras["input_wait_seconds"] = step_outputs.input_wait(
                    clock, staged_put=self.staging is not None and put)
            if stops is not None:
                extras["stop_requests"] = stops
            if tail is not None and tail_lib.TIMING in tail:
                extras[step_outputs.WORKER_TIMING] = tf.identity(
                    exchanged.extra_values[tail_lib.TIMING][0])
            return loss, count, applied, extras

    def _batches(self, put, timed, now):
        """(clock, each tower's batch): the staged or sliced input, with the
        time it was ready; the towers start after that timestamp, so it cannot
        run late (seen: a compute-bound step reporting input wait)."""
        clock, checks = {"start": now()}, []

        def got(batches):  # in program order before any put: see StagedInput
            if self.label_check is not None:
                checks.extend(self._label_checks(batches))
            with tf.control_dependencies([t for batch in batches for t in batch]):
                clock["ready"] = now()

        if self.staging is not None:
            batches = self.staging.tower_batches(self.devices, put=put, after_get=got)
        else:
            batches = self.input.tower_batches(self.devices)
            got(batches)
        if checks:  # only the loss waits for the check, not the forward pass
            batches = [(batch[0], _after(check, device, batch[1:])[0])
                       if check is not None else batch
                       for check, device, batch in zip(checks, self.devices, batches)]
        if timed:
            batches = [_after(clock["ready"], device, batch)
                       for device, batch in zip(self.devices, batches)]
        return clock, batches

    def _label_checks(self, batches):
        """Each tower's label check where its labels are (None: labels that
        are not numbers): a label outside the model's classes stops the step,
        before any update, with an error naming the input (a GPU's loss kernel
        would give NaN, a CPU's its own error). Built before the staging put:
        TensorFlow runs a function's stateful ops that take no resource in
        program order, so a check after the put would hold the towers until
        the next batch is in."""
        classes, where = self.label_check
        checks = []
        for device, (_, labels) in zip(self.devices, batches):
            with tf.device(device):
                checks.append(label_check(labels, classes, where)
                              if isinstance(labels, tf.Tensor) else None)
        return checks

    def _counts(self, batches, phase):
        """The step's Counts. Multi-worker in float32, and with accumulation,
        the loss is divided by the nominal global batch and the cluster's
        count comes in the tail (the update rescales by nominal / count);
        multi-worker in half precision, the count is summed before the towers."""
        with tf.device("/cpu:0"):
            local = tf.add_n([tf.shape(images)[0] for images, _ in batches])
            in_tail = self.num_workers > 1 and (phase != accumulate.WHOLE or self.fold_count)
            if phase != accumulate.WHOLE or self.fold_count:
                return Counts(local, tf.constant(self.nominal), None, None, in_tail)
            if self.num_workers > 1:
                cluster, stops = self._cluster_count_and_stop(local)
                return Counts(local, cluster, cluster, stops, in_tail)
            return Counts(local, local, local, None, in_tail)

    def _update_of(self, results, finite, counts, phase, sums_checked):
        """The Update the exchange takes: this step's towers, or (APPLY) the
        accumulated micro-batches with this last one."""
        if phase == accumulate.APPLY:
            return Update(*self._take_update(results, finite, counts.local, sums_checked))
        count = counts.cluster if counts.cluster is not None else counts.local
        return Update(results, count, None, None, finite)

    def _tail_values(self, update, batches, counts):
        """The tail's extra values: each tower's loss and examples (APPLY: the
        accumulated totals on device 0), this worker's stop flag when the
        tail carries it."""
        stops = self.stop_request.read_value() if counts.in_tail else None
        if update.loss is not None:
            first = [update.loss] + [None] * (len(self.devices) - 1)
            examples = [update.count] + [None] * (len(self.devices) - 1)
            return tail_lib.extra_values(self.devices, first, examples, stops)
        losses = [r.loss if r is not None else None for r in update.results]
        examples = [tf.shape(images)[0] for images, _ in batches]
        return tail_lib.extra_values(self.devices, losses, examples, stops)

    def _timing_values(self, update, clock, after):
        """The tail's per-worker timing (tail.timing_values): the seconds from
        the step's start until every local tower's gradients exist, and until
        the input was ready. A worker that holds the others back reaches the
        exchange late; the others' wait for it lands in the exchange. The time
        is the clock's `after` (a timestamp built here would also wait for the
        staging put, and a slow put would read as slow compute)."""
        grads = [g for r in update.results if r is not None for g in r.grads if g is not None]
        reached = after(grads)
        with tf.device("/cpu:0"):
            return tail_lib.timing_values(self.devices, self.task_index, self.num_workers,
                                          reached - clock["start"],
                                          clock["ready"] - clock["start"])

    def _decide(self, exchanged, update, counts, grad_scale):
        """Each device's verdict from its own copy of the sums: finite, and
        (count in the tail) some examples anywhere; with it the update's scale.
        Returns (exchanged with those verdicts, grad_scale per device or one,
        the reported loss, count and stop requests)."""
        verdicts, scales, reported = [], [], None
        for d, device in enumerate(self.devices):
            with tf.device(device):
                totals = tail_lib.totals(exchanged.extra_values[tail_lib.NAME][d])
                allowed, scale, loss = exchanged.finite[d], grad_scale, totals.loss
                if counts.in_tail:
                    share = tf.cast(totals.count, tf.float32) / tf.cast(self.nominal, tf.float32)
                    scale = share if scale is None else scale * share
                    loss = loss / share
                    # No examples anywhere: nothing to apply (nominal / 0).
                    allowed = tf.logical_and(allowed, totals.count > 0)
                verdicts.append(allowed)
                scales.append(scale)
                reported = reported or (loss, totals.count, totals.stops)
        loss, count, stops = reported
        if self.num_workers == 1:
            loss, count, stops = self._local_loss(update), update.count, counts.stops
        elif not counts.in_tail:
            count, stops = update.count, counts.stops
        with tf.device("/cpu:0"):
            loss = tf.identity(loss)
        return (exchanged._replace(finite=verdicts),
                scales if grad_scale is not None or counts.in_tail else None, loss, count,
                stops)

    def _local_loss(self, update):
        """The step's loss in one process: the towers' (mean of the towers'
        where they train apart)."""
        with tf.device("/cpu:0"):
            if update.loss is not None:
                return update.loss
            losses = [r.loss for r in update.results if r is not None]
            total = tf.add_n(losses)
            return total if self.variables.synchronous else total / len(losses)

    def _apply(self, exchanged, update, grad_scale, sums_checked, after):
        """(whether the update was applied, the time it was done). Where the
        exchange checked its sums, each copy decides alone (the manager's
        per-device branch); otherwise one boolean on the CPU decides for every
        copy, so replicas cannot diverge. The time is taken on the CPU once
        every copy's update is done (step_clock: not behind the staging put,
        so the put's overrun shows); a branch's flag is computed after the
        branch's updates (automatic control dependencies)."""
        stats = [r.non_trainable if r else None for r in update.results]
        scale = {"grad_scale": grad_scale} if grad_scale is not None else {}
        with private_api.forget_custom_gradients():  # else each trace leaks its graph
            if sums_checked:
                return self.variables.apply(exchanged, stats, timestamp=after, **scale)

            def update_all():
                applied = self.variables.apply(exchanged, stats, **scale)
                return tf.constant(True) if applied is None else applied
            with tf.device("/cpu:0"):
                applied = tf.cond(tf.reduce_all(tf.stack(update.finite)), update_all,
                                  lambda: tf.constant(False))
                return applied, after([applied])

    def _local_sums(self, results, finite):
        """On the CPU: this micro-batch's summed loss, top-1 count (None: not a
        classifier) and whether every tower's loss and gradients are finite."""
        with tf.device("/cpu:0"):
            live = [r for r in results if r is not None]
            correct = tf.add_n([r.correct for r in live]) if self.count_correct else None
            return tf.add_n([r.loss for r in live]), correct, tf.reduce_all(tf.stack(finite))

    def _accumulate(self, results, finite, local_count, clock, timed, after, staged_put):
        """ACCUMULATE: adds the micro-batch to the accumulators and keeps its
        batch-norm statistics; returns (loss, local examples, finite, extras)."""
        loss, correct, all_finite = self._local_sums(results, finite)
        done = self.accumulators.add(results, local_count, loss, correct, all_finite)
        accumulate.keep_statistics(self.variables, results)
        with tf.device("/cpu:0"):
            clock["computed"] = after(done)
            with tf.control_dependencies([clock["computed"]]):
                clock["end"] = self.clock.now(timed)
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
