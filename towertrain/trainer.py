"""The trainer: devices, variables, input and the step function, wired together.

    trainer = Trainer(Params(model="resnet20", num_gpus=2, device="cpu",
                             variable_update="replicated"))
    result = trainer.train()

The step is one tf.function (towertrain.engine.step.train_step): every tower runs under
its device on its slice, then, if every loss and gradient is finite, the
variable manager exchanges gradients and applies one update. The loop around
it lives in towertrain.engine.run.loop; features (logging, checkpoints, eval) are
callbacks; checkpoints and export are towertrain.state's.
"""
import collections
import dataclasses
import time

import keras
import tensorflow as tf

from towertrain import models
from towertrain import plan as plan_lib
from towertrain import tf_errors
from towertrain.plan import cluster as plan_cluster
from towertrain.plan import steps as steps_plan
from towertrain.engine.step import accumulate
from towertrain.engine.process import devices as devices_lib
from towertrain.engine.feed import epochs as epochs_lib
from towertrain.engine.run import header
from towertrain.engine.contract import in_step, keras_model, up_front
from towertrain.engine.run import watchdog
from towertrain.engine.process import runtime
from towertrain.engine.step import tower
from towertrain.engine import variable_mgr
from towertrain.engine.run import handles as handles_lib
from towertrain.engine.run import pack_tuning
from towertrain.engine.run import loop as loop_lib
from towertrain.engine.run import trainer_state
from towertrain.recipe import native_precision
from towertrain.recipe import precision
from towertrain.engine.feed import position
from towertrain.engine.feed import staging
from towertrain.engine.step import train_step as step_lib
from towertrain.engine.step import step_outputs
from towertrain.errors import TrainingDivergedError  # noqa: F401 - re-exported
from towertrain.engine.feed import input_factory
from towertrain.input_pipeline.base import Input
from towertrain.engine.run.loop import TrainResult  # noqa: F401 - re-exported
from towertrain.recipe import lr_schedule
from towertrain.recipe import optimizers
from towertrain.engine.step import sync_batch_norm
from towertrain.engine.distributed import cluster as cluster_lib  # multi-worker
from towertrain.state import resume as resume_lib
from towertrain.errors import OutOfMemoryError, ParamsError
from towertrain import callbacks as callbacks_lib
from towertrain.engine.distributed import joining
from towertrain.engine.evaluation import cluster_eval
from towertrain.engine.evaluation import evaluator as evaluation
from towertrain.state import checkpoint as ckpt_lib
from towertrain.state import export as export_lib
from towertrain.state import writable
from towertrain.input_pipeline.arrays import InputError


def join_cluster(params, before_server=None):
    """Joins the cluster `params` describe (multi-worker; nothing for one
    process) before TensorFlow runs any op: the library's entry point, as the
    CLI does it. Returns the cluster (towertrain.engine.distributed.joining;
    before_server: called with a multi-worker cluster before its server starts)."""
    return joining.join(plan_lib.lay_out(params), before_server)


class StepResult(collections.namedtuple("StepResult", "loss examples finite extras",
                                        defaults=({},))):
    """One step: its loss, the examples it trained on, whether every loss and
    gradient was finite (if not, nothing was applied), and `extras`, named
    Python scalars some runs add ('loss_scale' with --use_fp16). float() is the loss."""

    def __float__(self):
        return float(self.loss)


class Trainer:
    """Builds everything a run needs from a Params.

    model: a keras.Model to train instead of building `params.model` from the
      registry; leave Params.model unset then (giving both is refused). It
      must accept images in the run's data format.
    input_source: a towertrain.input_pipeline Input (create, tower_batches, ...);
      default: the Params' data (synthetic, or --data_dir).
    loss_fn: per-example loss(labels, logits); default softmax cross-entropy.
    check_devices: False builds for device names that need not exist, to trace
      and inspect a GPU graph on a machine without GPUs.
    """

    def __init__(self, params, model=None, input_source=None, loss_fn=None,
                 check_devices=True):
        self.params = params = self._follow_model(params, model)  # before any work
        self._closed = False
        # The plan's first half: devices, layout, runtime, exchange, what to read.
        layout = plan_lib.lay_out(params, cluster=cluster_lib.joined(
            plan_cluster.resolve(params), params.worker_hosts), user_model=model is not None)
        runtime.configure(layout.runtime)  # threads, XLA, GPU memory: before TensorFlow starts
        self.devices = devices_lib.prepare(layout.topology, check=check_devices)
        self.precision_support = self._check_devices(layout) if check_devices else None
        keras.utils.set_random_seed(layout.input.seed)
        self.model = model or self._build_model(layout)
        self.user_model = model is not None  # the run record names it as the user's
        if model is not None:  # before anything reads its inputs or outputs
            up_front.check_built(model, input_source)
        self._prepare_model(layout, user_model=model is not None, loss_fn=loss_fn)
        self.input = self._make_input(layout, input_source)
        # The whole plan: batches, steps, epochs, schedules (towertrain.plan).
        self.plan = plan_lib.build(params, layout, plan_lib.InputFacts.of(
            self.input, epochs_lib.entry_point_name(input_source) if input_source else None,
            getattr(input_source, "num_epochs", None) is not None))
        self.stop_request = None  # 1: this worker was asked to stop (callbacks/cluster_stop.py)
        if self.num_workers > 1:
            with tf.device("/cpu:0"):
                self.stop_request = tf.Variable(0, trainable=False, name="stop_request")
        # The model and the input fit each other, or an error in the user's terms.
        self._tower_labels = up_front.check(  # a user Input's: checked in the step
            self.model, self.input, self.data_format, user_model=model is not None,
            default_loss=loss_fn is None)
        epochs_lib.check_enough_input(params.num_epochs, self.input, self.total_steps,
                                      self.plan.batches.per_update)
        # The learning rate by global step (a keras LearningRateSchedule): the
        # optimizers call it with their iterations, which checkpoints restore.
        self.learning_rate = lr_schedule.build(self.plan.recipe.learning_rate)
        self._make_feed()
        self.variables = variable_mgr.create(self.plan.exchange, self.devices,
                                             self.plan.recipe.clipping,
                                             self.plan.topology.cluster)
        self.variables.create(self.model, optimizers.make_optimizer_factory(
            self.plan.recipe.optimizer, self.learning_rate))
        self.accumulators = (accumulate.Accumulators(self.devices, self.model.trainable_variables)
                             if self.accumulation.accumulating else None)
        self.loss_scale = precision.LossScale.from_plan(self.plan.recipe.precision)
        self._exchange = self.plan.exchange  # the step's: auto's packs change it
        self._step_fn = self._make_step()
        self._prepare_pack_tuning()
        self._sync_devices = runtime.sync_after_step(self.plan.runtime)

    def _prepare_pack_tuning(self):
        """--gradient_pack_mb=auto's PackTuning (None without it), and what
        the timing keeps until its pick."""
        self.pack_tuning = None
        if self.plan.exchange.tune_pack_size:
            self.pack_tuning = pack_tuning.PackTuning(
                self.model.trainable_variables, self._use_pack_size,
                self.variables.cluster_max, header.wire_dtype(self.plan))
        self._pack_start = {}  # what train()'s resume tells it (PackTuning.start)
        self._built_steps = {}  # pack bytes -> (exchange, step fn, its phase) while timing

    @staticmethod
    def _follow_model(params, model):
        """The Params a model passed in trains under: what Keras' fit would use
        of it is followed (its data format) or refused."""
        up_front.check_one_model(params.model, model)
        if model is None:
            return params
        keras_model.check_usable(model)
        data_format = keras_model.run_data_format(params.data_format, model)
        return params if data_format == params.data_format else params.replace(
            data_format=data_format)

    def _build_model(self, layout):
        """The registry's model, under --use_fp16/--use_bf16's Keras mixed policy."""
        with tf.device("/cpu:0"), precision.policy_scope(layout.precision):
            return models.build(layout.model, num_classes=models.DATASET_CLASSES[layout.dataset],
                                data_format=layout.topology.data_format)

    def _prepare_model(self, layout, user_model, loss_fn):
        """The model's precision, loss, decay mask and synchronized batch norms."""
        precision.check_model(self.model, layout.precision)
        self.loss_fn = loss_fn or tower.sparse_softmax_cross_entropy
        self.user_loss_fn = loss_fn  # None: the default loss
        # Which variables get L2 decay: the registered model's rule, or the
        # default rule (kernels only) for a model passed in.
        self.decay_mask = models.weight_decay_mask(self.model,
                                                   None if user_model else layout.model)
        self._synced_batch_norms = 0
        if layout.exchange.sync_batch_norm:
            self._synced_batch_norms = sync_batch_norm.attach(self.model)
            if not self._synced_batch_norms:
                raise ParamsError(f"--sync_batch_norm: model {self.model.name!r} has no "
                                  "batch-norm layers to synchronize; drop the flag")

    def _make_input(self, layout, input_source):
        """The user's input (its epochs agreed with the Params'), or the plan's;
        multi-worker, this worker's share of each batch."""
        # The header's Dataset line: where a user's own input comes from.
        self.input_origin = None if input_source is None else (
            getattr(input_source, "origin", None) or f"{type(input_source).__name__} "
            "(your input)")
        if input_source is not None and not isinstance(input_source, Input):
            raise TypeError(f"input_source: {type(input_source).__name__} is not a "
                            "towertrain.input_pipeline.base.Input; subclass it (create, "
                            "tower_batches; optionally steps_per_epoch, eval_data, ...)")
        # One place decides the epochs: Params(num_epochs) against the input's.
        input_source = epochs_lib.agree(self.params.num_epochs, input_source)
        made = input_source or input_factory.make_input(
            layout.input, layout.topology, image_shape=self.model.input_shape[1:],
            num_classes=self.model.output_shape[-1],
            per_process_batch=layout.batch_per_device * len(self.devices),
            train=not self.params.eval)  # --eval reads the eval split only
        return input_factory.input_for_worker(made, layout.topology.cluster)

    @staticmethod
    def _check_devices(layout):
        """Refused before anything is built: an emulated half precision, a
        layout the device cannot run. Returns the precision support."""
        topology = layout.topology
        support = native_precision.check(layout.precision, topology.device)
        devices_lib.check_data_format(topology.device, topology.data_format)
        devices_lib.check_split_gpu_exchange(topology, layout.exchange)
        devices_lib.check_nccl(topology, layout.exchange)
        devices_lib.check_half_precision_layout(topology.device, topology.data_format,
                                                layout.precision.half)
        return support

    def _make_feed(self):
        """Staging (when on) and the input position (engine/feed/position.py)."""
        staged = None  # the staging wrapper when staging is on: the one place that decides
        if self.plan.input.staging_depth > 0 and self.input.stage:
            self.input = staged = staging.StagedInput(
                self.input, self.plan.input.staging_depth, group=self.plan.input.batch_group_size)
        try:  # the input's first batches are built here (synthetic: the whole batch)
            self.input.create(self.devices)
        except tf.errors.ResourceExhaustedError as err:
            raise self._out_of_memory("while building the input",
                                      "lower --batch_size (add --gradient_accumulation_steps "
                                      "to keep the global batch)") from err
        self.feed = position.FeedPosition(self.input, staged, self.accumulation, self.total_steps)

    def _make_step(self):
        """The step function (towers, exchange, finite check, update):
        engine/step/train_step.py, given the parts it runs and the plan's values."""
        plan = self.plan
        step = step_lib.TrainStep(
            self.model, self.devices, self.variables, self.feed, loss_fn=self.loss_fn,
            decay_mask=self.decay_mask, loss=plan.recipe.loss, exchange=self._exchange,
            nominal_batch=plan.batches.global_batch, xla_compile=plan.runtime.xla_compile,
            loss_scale=self.loss_scale, accumulators=self.accumulators,
            num_workers=plan.topology.num_workers,
            tower_indices=plan.topology.global_tower_indices, stop_request=self.stop_request,
            output_levels=step_outputs.levels(plan.outputs),
            cluster_towers=plan.topology.num_towers * plan.topology.num_workers,
            seed=plan.recipe.seed, half_precision=plan.recipe.precision.half is not None,
            label_check=self._tower_labels,
            report_timing=self.params.straggler_threshold > 0)
        self._step_phase = step.marks.variable  # read by the step watchdog if a step hangs
        return step.fn

    def _use_pack_size(self, pack_bytes):
        """The step exchanges packs of at most `pack_bytes` (None: one per
        dtype): --gradient_pack_mb=auto's candidates, each step function built
        once and kept while they are timed, then its pick."""
        built, current = self._built_steps, self._exchange.gradient_pack_bytes
        if pack_bytes != current:
            built[current] = (self._exchange, self._step_fn, self._step_phase)
            if pack_bytes in built:
                self._exchange, self._step_fn, self._step_phase = built[pack_bytes]
                self.variables.repack(self._exchange)
            else:
                self._exchange = dataclasses.replace(self._exchange,
                                                     gradient_pack_bytes=pack_bytes)
                self.variables.repack(self._exchange)  # the new step's trace reads it
                self._step_fn = self._make_step()
        if not self.pack_tuning.tuning:
            built.clear()

    def _start_pack_tuning(self, start_step=None):
        """--gradient_pack_mb=auto: the timing starts with the run (once)."""
        if self.pack_tuning is None or self.pack_tuning.started:
            return
        start_step = self.global_step() if start_step is None else start_step
        self.pack_tuning.start(start_step + 1, steps_plan.warmup_of_run(
            self.num_warmup_batches, start_step, self.total_steps), **self._pack_start)

    # The plan's facts under the names callbacks, tests and users read.
    cluster = property(lambda self: self.plan.topology.cluster)
    num_workers = property(lambda self: self.cluster.num_workers)
    data_format = property(lambda self: self.plan.topology.data_format)
    batch_size = property(lambda self: self.plan.batches.per_device)
    dataset_name = property(lambda self: self.plan.dataset)
    global_batch_size = property(lambda self: self.plan.batches.global_batch)
    accumulation = property(lambda self: self.plan.steps.accumulation)
    num_warmup_batches = property(lambda self: self.plan.steps.warmup)
    num_batches = property(lambda self: self.plan.steps.timed)
    total_steps = property(lambda self: self.plan.steps.total,
                           doc="The global step the run ends at: warmup + timed steps, or the epochs.")

    def step(self, outputs=0):
        """Runs one training step; returns a StepResult (float() of it is the loss).

        outputs: 1 adds the gradient norm to the extras, 2 also the summed
        gradients (the summaries ask for them on the steps they write)."""
        trainer_state.check_open(self._closed, "step")
        self._start_pack_tuning()  # stepping without train() / begin()
        try:
            if self.pack_tuning is not None and self.pack_tuning.tuning:
                return self.pack_tuning.run_step(lambda: self._step(outputs))
            return self._step(outputs)
        except (tf.errors.InvalidArgumentError, tf.errors.DataLossError) as err:
            # Raised by the input pipeline (a generator's element, a decode):
            # one line naming the input, not TensorFlow's page of stack.
            if not step_lib.from_input_pipeline(err):
                raise
            raise InputError(f"bad input data in {self._input_name()}: "
                             f"{tf_errors.error_text(err)}") from err
        except InputError as err:
            head, _, rest = str(err).partition(": ")
            if "\n" not in rest:
                raise
            raise InputError(f"{head}: {tf_errors.error_text(rest)}") from err

    def _input_name(self):
        return getattr(self.input, "description", None) or self.input_origin or "the input"

    def _step(self, outputs):
        self.feed.start(self.global_step())  # stepping without train() / begin()
        with step_lib.input_errors(self.input, self.feed.staging,
                                   lambda: self.feed.position(self.global_step())):
            waited = 0.0
            for phase in self.feed.phases():
                started = time.perf_counter()
                staged = self.feed.staging
                watchdog.mark(watchdog.INPUT)  # what the step watchdog names if it hangs
                put = staged.before_step() if staged is not None else True
                waited += time.perf_counter() - started  # priming after a fence is input wait
                watchdog.mark(watchdog.STEP_FUNCTION, self._step_phase)
                try:
                    if phase == accumulate.WHOLE:
                        loss, examples, finite, extras = self._step_fn(put, outputs)
                    else:  # a micro-batch: only the update's last one outputs more
                        loss, examples, finite, extras = self._step_fn(
                            put, outputs if phase == accumulate.APPLY else 0, phase)
                    if self._sync_devices is not None:  # --sync_on_finish
                        watchdog.mark(watchdog.DEVICE_SYNC)
                        self._sync_devices()
                except tf.errors.ResourceExhaustedError as err:
                    if self.accumulators is not None:
                        self.accumulators.reset()
                    raise self._out_of_memory(
                        "in a training step", "lower --batch_size (add "
                        "--gradient_accumulation_steps to keep the global batch) or train a "
                        "smaller model") from err
                except BaseException:
                    if self.accumulators is not None:  # a failed update leaves no partial sums
                        self.accumulators.reset()
                    raise
                extras = step_outputs.to_python(extras)
                if phase == accumulate.ACCUMULATE:
                    waited += extras.get("input_wait_seconds", 0.0)
            self.feed.next_update += 1
            if "input_wait_seconds" in extras:
                extras["input_wait_seconds"] += waited
            examples = int(examples)
            correct = extras.pop("top1_correct", None)
            if correct is not None and examples:
                extras["top1"] = correct / examples
            return StepResult(float(loss), examples, bool(finite), extras)

    def _out_of_memory(self, where, remedy):
        """The one line of a run that did not fit (TensorFlow's OOM: a page of
        allocator state), in the run's terms: `where` it happened, what to try."""
        plan, count = self.plan, len(self.devices)
        workers = plan.topology.num_workers
        # Per device x devices (x workers) = the global batch, as the header's.
        cluster = f" x {workers} workers" if workers > 1 else ""
        return OutOfMemoryError(
            f"out of memory {where}: --batch_size={plan.batches.per_device} per "
            f"device on {plan.topology.device} ({count} device{'' if count == 1 else 's'}"
            f"{cluster}, global batch {plan.batches.global_batch}); {remedy}")

    def global_step(self):
        """Updates applied so far (restored from checkpoints, drives schedules)."""
        return int(self.variables.iterations().numpy())

    def begin(self, start_step):
        """The loop starts after global step `start_step` (0, or a resumed step)."""
        self.feed.begin(start_step, warmup=steps_plan.warmup_of_run(
            self.num_warmup_batches, start_step, self.total_steps))
        self._start_pack_tuning(start_step)

    def add_fence(self, step):
        """Nothing will be staged past global step `step` (engine/feed/position.py)."""
        self.feed.add_fence(step)

    def drain(self):
        """Stops staging; returns how many steps remain to train on what is staged."""
        return self.feed.drain()

    def engine_variables(self):
        """Engine state that checkpoints carry besides the model: the loss scale,
        the variable manager's own (relaxed consistency's held sums)."""
        found = dict(self.variables.engine_variables())
        if self.loss_scale:
            found.update({f"loss_scale/{name}": variable
                          for name, variable in self.loss_scale.checkpoint_variables().items()})
        return found

    def staged_batches(self):
        return self.feed.staged_batches()

    def trace_step(self, phase=None):
        """The step's concrete function, traced but not run (graph inspection).
        With accumulation: the micro-batch that exchanges and applies, or
        `phase` (engine/step/accumulate.py: ACCUMULATE, APPLY)."""
        if self.accumulators is not None:
            return self._step_fn.get_concrete_function(True, 0, phase or accumulate.APPLY)
        return self._step_fn.get_concrete_function(True, 0)

    def sync_model(self):
        """Writes the trained values (the primary copy) into the Keras model, so
        `trainer.model.predict` and saving the model see the training."""
        trainable, non_trainable = self.variables.primary_variables()
        for target, source in zip(self.model.trainable_variables, trainable):
            target.assign(source.value)
        for target, source in zip(self.model.non_trainable_variables, non_trainable):
            target.assign(source.value)

    def close(self):
        """Clears the staging areas, stops the input's threads and, multi-worker,
        the watch of the peers (the last collective is done); safe to call twice.
        A closed Trainer refuses step() and train()."""
        self._closed = True
        self.input.close()
        self.variables.close()

    def header_info(self):
        """The header's (label, value) pairs (towertrain.engine.run.header)."""
        return header.training_info(
            self.plan, self.model, self.input, self.learning_rate, self.loss_scale,
            self.precision_support, self._synced_batch_norms, self.input_origin,
            self.pack_tuning.header_text() if self.pack_tuning and self.pack_tuning.started
            else None)

    def train(self, write=print, eval_data=None, callbacks=()):
        """Trains to the planned total step with tf_cnn_benchmarks output; with
        --train_dir also resume, periodic saves and SIGINT/SIGTERM handling.

        eval_data: an input_pipeline EvalData for eval during training
          (default: the input's eval split). callbacks: extra
          towertrain.callbacks.Callback objects, run after the built-in ones.
        """
        # Before anything is written or trained.
        trainer_state.check_open(self._closed, "train")
        trainer_state.check_steps_left(self.global_step(), self.total_steps)
        writable.check_run(self.plan.outputs, training=not self.params.eval)
        handles = self._run_handles(eval_data)
        # The train_dir's lock, the record's checks, the restore: before any callback.
        resumed = resume_lib.resume(self.plan, handles, write)
        self._pack_start = dict(recorded=resumed.pack_pick, resumed=bool(resumed.resumed_from),
                                write=write, on_pick=resumed.record_pack_pick)
        built = callbacks_lib.default_callbacks(self.plan, handles, resumed, write)
        result = loop_lib.run(handles, built + list(callbacks), self.total_steps, write)
        self.sync_model()
        return result

    def _run_handles(self, eval_data=None):
        """What the loop and the built-in callbacks get instead of the trainer
        (towertrain.engine.run.handles). The eval split is resolved here, before
        training, so a missing one fails first. Every worker evaluates its share
        of the split (towertrain.engine.evaluation.cluster_eval)."""
        evaluator = data = None
        if self.plan.steps.eval_schedule is not None:
            data = self._eval_data(eval_data)
            evaluator = cluster_eval.evaluator_for(self._evaluator(), self.plan.topology)
        return handles_lib.RunHandles(
            step=self.step, global_step=self.global_step, begin=self.begin, drain=self.drain,
            header_info=self.header_info, add_fence=self.add_fence,
            staged_batches=self.staged_batches,
            staging_depth=self.feed.staging.depth if self.feed.staging is not None else 0,
            evaluator=evaluator, eval_data=data, learning_rate=self.learning_rate,
            model=self.model, variables=self.variables, input=self.input,
            engine_variables=self.engine_variables, user_model=self.user_model,
            stop_request=self.stop_request,
            trace_step=self.trace_step, settings=dataclasses.asdict(self.params),
            loss_probe=self.user_loss_fn and (
                lambda: in_step.loss_fn_problem(self.user_loss_fn, self.model)))

    def evaluate(self, eval_data=None, write=None):
        """Top-1/top-5 of the current variables over `eval_data` (default: the
        input's eval split); prints the result line when `write` is given."""
        result = self._evaluator().evaluate(self._eval_data(eval_data))
        if write is not None:
            write(evaluation.format_result(result, self.global_step()))
        return result

    def _eval_data(self, eval_data=None):
        """`eval_data`, else the input's eval split, in the plan's eval batches and
        amount (--num_eval_batches, --num_eval_epochs)."""
        return evaluation.eval_data_for(self.input, self.plan.batches.eval_per_process,
                                        self.plan.outputs, eval_data)

    def _evaluator(self):
        """An Evaluator of this trainer's variables, model and devices."""
        return evaluation.Evaluator(self.model, self.variables, self.devices)

    # --- Library API (towertrain/__init__.py): export, save, restore. save()
    # and restore() are a portable checkpoint without the input position; an
    # exact resume is train() with Params(train_dir=...) (docs/library.md). ---
    def export(self, path):
        """Writes the trained model as a stock-Keras `.keras` file (loads with
        keras.saving.load_model without towertrain); returns that model. A model
        with layers of your own is saved as it is (load it with your classes)."""
        self.sync_model()
        return export_lib.save_stock_keras(self.model, path)

    def save(self, path):
        """Writes the model, optimizer slots, global step and loss scale to the
        checkpoint prefix `path` (portable: restores into any mode, device count
        or data format). The input position is not saved: for exact resume of the
        data use Params(train_dir=...) with train(). Returns the written path."""
        return ckpt_lib.save_portable(self.model, self.variables, path,
                                      engine_variables=self.engine_variables())

    def restore(self, path):
        """Reads a checkpoint (a prefix written by save() or a train_dir's
        ckpt-N) into every copy and the Keras model; a checkpoint of another
        model fails naming the missing and unexpected variables."""
        ckpt_lib.restore_portable(self.model, self.variables, path,
                                  engine_variables=self.engine_variables())
        self.sync_model()
        self.feed.restart_at(self.global_step())
