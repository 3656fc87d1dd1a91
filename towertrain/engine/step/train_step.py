"""The training step as one tf.function: towers, exchange, finite check, update.

Every tower runs under its device on its slice (in lockstep with the others
for --sync_batch_norm); then, if every loss and gradient is finite, the
variable manager exchanges gradients and applies one update. The step is
built from the parts it runs (model, devices, variables, feed, loss) and the
plan's values it needs, never from the trainer.
"""
import contextlib
import functools

import tensorflow as tf

from towertrain import private_api
from towertrain.engine.step import accumulate
from towertrain.engine.run import model_checks
from towertrain.engine.step import step_outputs
from towertrain.engine.step import tower
from towertrain.input_pipeline.arrays import InputError
from towertrain.recipe import l2_loss


def _empty_tower(trainable, non_trainable, count_correct):
    """What a tower with no examples contributes: nothing (zero loss and
    gradients, batch-norm statistics passed through unchanged)."""
    return tower.TowerResult(tf.constant(0.0), [tf.zeros_like(v) for v in trainable],
                             [tf.identity(v) for v in non_trainable],
                             tf.constant(0, tf.int64) if count_correct else None)


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
            if input_source.description:
                raise InputError(f"bad input data in {input_source.description}: "
                                 f"{err.message}") from err
        raise


def _after(op, device, tensors):
    with tf.device(device), tf.control_dependencies([op]):
        return tuple(tf.identity(t) for t in tensors)


class TrainStep:
    """Builds the step function from the parts it runs. `fn(put, outputs)`
    returns (loss, global example count, applied, extras).

    feed: the run's engine.feed.position.Feed (its input, and its staging or
    None); loss_fn(labels, logits) per example; decay_mask: which trainable
    variables get weight decay; loss: the recipe's Loss section; exchange: the
    plan's Exchange section; xla_compile: each tower as one XLA cluster;
    loss_scale: a recipe.precision.LossScale or None; accumulators: the
    per-device sums of --gradient_accumulation_steps, or None; nominal_batch:
    the global batch a micro-batch's loss is divided by; tower_indices: each
    tower's index among the cluster's (random streams); stop_request: this
    worker's stop flag (multi-worker); output_levels: the extras' levels to
    trace ahead of the first step (step_outputs.levels).
    """

    def __init__(self, model, devices, variables, feed, *, loss_fn, decay_mask, loss,
                 exchange, nominal_batch, xla_compile=False, loss_scale=None,
                 accumulators=None, num_workers=1, tower_indices=None, stop_request=None,
                 output_levels=(step_outputs.SCALARS,)):
        self.model, self.devices, self.variables = model, list(devices), variables
        self.input, self.staging = feed.input, feed.staging
        self.loss_fn, self.decay_mask = loss_fn, decay_mask
        self.weight_decay = loss.weight_decay
        self.sync_batch_norm = exchange.sync_batch_norm
        self.loss_scale = loss_scale
        self.num_workers = num_workers
        self.tower_indices = (tuple(tower_indices) if tower_indices is not None
                              else tuple(range(len(self.devices))))
        self.stop_request = stop_request
        self.seed_states = tower.seed_state_indices(self.model)
        self.count_correct = tower.is_classifier(self.model)
        # A half-precision transfer carries the loss-scaled gradients, unscaled
        # after the sum (as tf_cnn_benchmarks), so small ones survive float16.
        self.scaled_transfer = bool(self.loss_scale) and exchange.compact_gradient_transfer
        self.loss_options = l2_loss.from_plan(loss)  # decay op, reported loss
        self.compute_tower = tower.compute_tower
        if xla_compile:
            # Each tower's forward and backward as one XLA cluster on its device;
            # the exchange and the update stay outside (they cross devices).
            self.compute_tower = tf.function(tower.compute_tower, jit_compile=True)
        # --gradient_accumulation_steps: the per-device sums between an
        # update's micro-batches, and the loss denominator of one micro-batch
        # (the global batch; the update's true count rescales at the end).
        self.accumulators = accumulators
        self.nominal = nominal_batch
        self.fn = tf.function(self._train_step)
        if self.staging is not None:
            # Steps before a fence or the end only drain (put=False). Trace that
            # variant now: traced on first use it would stall a timed step
            # (measured: ~100 ms).
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
            global_count = tf.add_n([tf.shape(images)[0] for images, _ in batches])
            stop_requests = None
            if phase != accumulate.WHOLE:
                # A micro-batch's loss is divided by the nominal global batch (no
                # exchange for the count); the update rescales by nominal / count.
                local_count, denominator = global_count, tf.constant(self.nominal)
            elif self.num_workers > 1:  # multi-worker: examples on every worker's towers
                global_count, stop_requests = self._cluster_count_and_stop(global_count)
            if phase == accumulate.WHOLE:
                denominator = global_count
            loss_scale = self.loss_scale.value() if self.loss_scale else None
        # A statically empty slice (fewer examples than towers) computes nothing.
        active = [i for i, (images, _) in enumerate(batches) if images.shape[0] != 0]
        if self.sync_batch_norm and len(active) > 1:
            computed = self._towers_in_lockstep(active, batches, denominator, loss_scale)
        else:
            computed = {i: self._tower(i, *batches[i], denominator, loss_scale)
                        for i in active}
        results, finite = [], []
        for i, device in enumerate(self.devices):
            result = computed.get(i)
            if result is not None:
                with tf.device(device):
                    result = result._replace(non_trainable=tower.offset_seed_states(
                        result.non_trainable, self.seed_states, self._seed_tower(i),
                        undo=True))
                    finite.append(tower.all_finite(result))
            results.append(result)
        if phase == accumulate.ACCUMULATE:
            return self._accumulate(results, finite, local_count, clock, timed, now)
        update_loss = update_correct = None
        if phase == accumulate.APPLY:
            (results, global_count, update_loss, update_correct, finite,
             stop_requests) = self._take_update(results, finite, local_count)
        # Outside the finite check's branch: a branch waits for all its inputs,
        # while here each gradient pack's exchange starts once its gradients exist.
        grads = self.variables.exchange([r.grads if r else None for r in results])
        with tf.device("/cpu:0"):
            all_finite = tf.reduce_all(tf.stack(finite))
            if self.num_workers > 1:  # multi-worker: every worker takes the same branch
                all_finite = self.variables.cluster_finite(all_finite)

        def update():
            scale = {"grad_scale": loss_scale} if self.scaled_transfer else {}
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
                grad_scale=loss_scale if self.scaled_transfer else None)
            if update_correct is not None:
                extras["top1_correct"] = update_correct
            with tf.control_dependencies([clock["computed"]]):
                clock["end"] = now()
            if timed:
                extras["input_wait_seconds"] = step_outputs.input_wait(clock)
            if stop_requests is not None:
                extras["stop_requests"] = stop_requests
            if update_loss is not None:
                return update_loss, global_count, applied, extras
            losses = [r.loss for r in results if r is not None]
            total = tf.add_n(losses)
            if self.num_workers > 1:  # multi-worker: the loss over every worker's towers
                total = self.variables.cluster_loss(total)
            loss = total if synchronous else total / len(losses)
            return loss, global_count, applied, extras

    def _local_sums(self, results, finite):
        """On the CPU: this micro-batch's summed loss, top-1 count (None: not a
        classifier) and whether every tower's loss and gradients are finite."""
        with tf.device("/cpu:0"):
            live = [r for r in results if r is not None]
            correct = tf.add_n([r.correct for r in live]) if self.count_correct else None
            return tf.add_n([r.loss for r in live]), correct, tf.reduce_all(tf.stack(finite))

    def _accumulate(self, results, finite, local_count, clock, timed, now):
        """ACCUMULATE: adds the micro-batch to the accumulators and keeps its
        batch-norm statistics; returns (loss, local examples, finite, extras)."""
        loss, correct, all_finite = self._local_sums(results, finite)
        done = self.accumulators.add(results, local_count, loss, correct, all_finite)
        accumulate.keep_statistics(self.variables, results)
        with tf.device("/cpu:0"):
            with tf.control_dependencies(done):
                clock["computed"] = now()
                clock["end"] = now()
            extras = {"input_wait_seconds": step_outputs.input_wait(clock)} if timed else {}
            return loss, local_count, all_finite, extras

    def _take_update(self, results, finite, local_count):
        """APPLY: the update's results from the accumulators plus this last
        micro-batch. Returns (per-tower results carrying the update's
        gradients, the update's examples over every worker, its loss, its top-1
        count, per-tower finite flags). The micro-batches' losses were divided
        by the nominal global batch: nominal / count makes both the mean over
        the update's examples, so a partial last batch weighs what it holds."""
        loss, correct, all_finite = self._local_sums(results, finite)
        grads, count, loss, correct, all_finite = self.accumulators.take(
            results, local_count, loss, correct, all_finite)
        with tf.device("/cpu:0"):
            stop_requests = None
            if self.num_workers > 1:  # one exchange of count and loss per update
                count, stop_requests = self._cluster_count_and_stop(count)
                loss = self.variables.cluster_loss(loss)
            ratio = tf.cast(self.nominal, tf.float32) / tf.cast(count, tf.float32)
            loss = loss * ratio
        combined, finite = [], [all_finite]
        for i, device in enumerate(self.devices):
            with tf.device(device):
                scaled = [g * tf.cast(ratio, g.dtype) for g in grads[i]]
                new_stats = results[i].non_trainable if results[i] is not None else None
                combined.append(tower.TowerResult(tf.constant(0.0), scaled, new_stats))
                finite.append(tower.all_finite(combined[-1]))
        return combined, count, loss, correct, finite, stop_requests

    def _cluster_count_and_stop(self, count):
        """Multi-worker: the examples over every worker, and how many workers
        asked to stop. The stop requests travel in the same collective (one
        more value, no round trip): every worker learns of a preemption notice
        in the step (with accumulation, the update) it arrived in
        (towertrain.callbacks.cluster_stop)."""
        both = self.variables.cluster_count(
            tf.stack([count, self.stop_request.read_value()]))
        return both[0], both[1]

    def _seed_tower(self, i):
        """The tower's index for random streams: multi-worker, the global one."""
        return self.tower_indices[i]

    def _tower_values(self, i):
        """Tower i's (trainable, non-trainable) values, read on the current
        device, with its random-stream offset applied."""
        trainable, non_trainable = self.variables.tower_inputs(i)
        return trainable, tower.offset_seed_states(non_trainable, self.seed_states,
                                                   self._seed_tower(i))

    def _tower(self, i, images, labels, global_count, loss_scale):
        """Tower i's TowerResult, computed on its own."""
        with tf.device(self.devices[i]), tf.name_scope(f"tower_{i}"):
            trainable, non_trainable = self._tower_values(i)
            denominator = global_count if self.variables.synchronous else tf.shape(images)[0]
            compute = functools.partial(
                self.compute_tower, self.model, trainable, non_trainable, images,
                labels, denominator, self.loss_fn, self.weight_decay,
                self.decay_mask, loss_scale, self.count_correct, not self.scaled_transfer,
                loss_options=self.loss_options)
            if images.shape[0] is None:
                # A dynamic slice (the last partial batch) may be empty at run
                # time: the guard gives zero gradients and unchanged batch-norm
                # statistics instead of NaN stats from a 0-example batch.
                return tf.cond(tf.shape(images)[0] > 0, compute, functools.partial(
                    _empty_tower, trainable, non_trainable, self.count_correct))
            return compute()

    def _towers_in_lockstep(self, active, batches, global_count, loss_scale):
        """{i: TowerResult} of the active towers traced together, so batch-norm
        layers normalize with the statistics of the whole global batch
        (--sync_batch_norm). No empty-slice guard is needed: the counts travel
        with the sums, and an empty slice adds zeros."""
        def forward(i):
            images, labels = batches[i]

            def run():
                with tf.device(self.devices[i]), tf.name_scope(f"tower_{i}"):
                    trainable, non_trainable = self._tower_values(i)
                    return trainable, labels, tower.forward(
                        self.model, trainable, non_trainable, images, labels, global_count,
                        self.loss_fn, self.weight_decay, self.decay_mask, loss_scale,
                        self.loss_options)
            return run

        results = tower.compute_towers_in_lockstep(
            [forward(i) for i in active], self.devices[active[0]], loss_scale,
            self.count_correct, not self.scaled_transfer)
        return dict(zip(active, results))
