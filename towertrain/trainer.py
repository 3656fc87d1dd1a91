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
import time

import keras
import tensorflow as tf

from towertrain import models
from towertrain.engine.step import accumulate
from towertrain.engine.process import devices as devices_lib
from towertrain.engine.feed import epochs as epochs_lib
from towertrain.engine.run import header
from towertrain.engine.run import model_checks
from towertrain.engine.process import runtime
from towertrain.engine.step import tower
from towertrain.engine import variable_mgr
from towertrain.engine.run import loop as loop_lib
from towertrain.recipe import native_precision
from towertrain.recipe import precision
from towertrain.engine.feed import staging
from towertrain.engine.step import train_step as step_lib
from towertrain.engine.step import step_outputs
from towertrain.errors import TrainingDivergedError  # noqa: F401 - re-exported
from towertrain.engine.feed import input_factory
from towertrain.input_pipeline.base import Input
from towertrain.engine.run.loop import TrainResult  # noqa: F401 - re-exported
from towertrain.recipe import accumulation
from towertrain.recipe import lr_schedule
from towertrain.recipe import optimizers
from towertrain.engine.step import sync_batch_norm
from towertrain.engine.distributed import cluster as cluster_lib  # multi-worker
from towertrain.errors import ParamsError


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
      registry. It must accept images in the run's data format.
    input_source: a towertrain.input_pipeline Input (create, tower_batches, ...);
      default: the Params' data (synthetic, or --data_dir).
    loss_fn: per-example loss(labels, logits); default softmax cross-entropy.
    check_devices: False builds for device names that need not exist, to trace
      and inspect a GPU graph on a machine without GPUs.
    """

    def __init__(self, params, model=None, input_source=None, loss_fn=None,
                 check_devices=True):
        self.params = params
        runtime.configure(params)  # threads, XLA, GPU memory: before TensorFlow initializes
        if check_devices:
            devices_lib.check_implicit_cpu_towers(params.device, params.num_gpus)
        self.devices = devices_lib.tower_devices(
            params.resolved_device, params.num_gpus, check=check_devices,
            indices=params.gpu_indices and runtime.parse_gpu_indices(params.gpu_indices))
        # An emulated half precision is refused before anything is built.
        self.precision_support = (native_precision.check(params, params.resolved_device)
                                  if check_devices else None)
        spec = models.get_spec(params.model)
        self.data_format = params.resolved_data_format
        if check_devices:
            devices_lib.check_data_format(params.resolved_device, self.data_format)
        self.batch_size = params.batch_size or spec.default_batch_size
        self.dataset_name = params.data_name or spec.default_dataset
        keras.utils.set_random_seed(params.tf_random_seed)
        self.model = model or self._build_model(spec)
        if model is not None:  # before anything reads its inputs or outputs
            model_checks.check_built(model, input_source)
        precision.check_model(self.model, params)
        self.loss_fn = loss_fn or tower.sparse_softmax_cross_entropy
        # Which variables get L2 decay: the registered model's rule, or the
        # default rule (kernels only) for a model passed in.
        self.decay_mask = models.weight_decay_mask(self.model,
                                                   None if model is not None else params.model)
        self._synced_batch_norms = 0
        if params.sync_batch_norm:
            self._synced_batch_norms = sync_batch_norm.attach(self.model)
            if not self._synced_batch_norms:
                raise ParamsError(f"--sync_batch_norm: model {self.model.name!r} has no "
                                  "batch-norm layers to synchronize; drop the flag")

        # The header's Dataset line: where a user's own input comes from.
        self.input_origin = None if input_source is None else (
            getattr(input_source, "origin", None) or f"{type(input_source).__name__} "
            "(your input)")
        if input_source is not None and not isinstance(input_source, Input):
            raise TypeError(f"input_source: {type(input_source).__name__} is not a "
                            "towertrain.input_pipeline.base.Input; subclass it (create, "
                            "tower_batches; optionally steps_per_epoch, eval_data, ...)")
        # One place decides the epochs: Params(num_epochs) against the input's.
        input_source = epochs_lib.agree(params, input_source)
        self.input = input_source or input_factory.make_input(
            params, image_shape=self.model.input_shape[1:],
            num_classes=self.model.output_shape[-1],
            global_batch=self.batch_size * len(self.devices), data_format=self.data_format,
            dataset_name=self.dataset_name)
        # --- multi-worker (engine/distributed/cluster.py): this worker's share of each batch
        self.cluster = cluster_lib.for_params(params)
        self.num_workers = self.cluster.num_workers
        self.input = input_factory.shard_for_worker(self.input, self.cluster)
        self.stop_request = None  # 1: this worker was asked to stop (callbacks/cluster_stop.py)
        if self.num_workers > 1:
            with tf.device("/cpu:0"):
                self.stop_request = tf.Variable(0, trainable=False, name="stop_request")
        # --- end multi-worker
        # The model and the input fit each other, or an error in the user's terms.
        model_checks.check(self, user_model=model is not None, default_loss=loss_fn is None)
        # Global batches per update (--gradient_accumulation_steps): the global
        # step counts updates, the input position batches (recipe/accumulation.py).
        self.accumulation = accumulation.Plan(
            params.gradient_accumulation_steps,
            lr_schedule.epoch_steps(params, self.input.steps_per_epoch, self.global_batch_size))
        self.num_warmup_batches, self.num_batches = self._plan_steps()
        epochs_lib.check_lasts(params, self.input, self.total_steps,
                               self.global_batch_size * self.accumulation.steps)
        # The learning rate by global step (a keras LearningRateSchedule): the
        # optimizers call it with their iterations, which checkpoints restore.
        self.learning_rate = lr_schedule.build(
            params, params.init_learning_rate or spec.default_learning_rate,
            global_batch=self.global_batch_size * self.accumulation.steps,
            total_steps=self.total_steps, steps_per_epoch=self.accumulation.updates_per_epoch)
        # The staging wrapper when staging is on, else None: the one place that decides.
        self._staging = None
        if params.staging_depth > 0 and self.input.stage:
            self.input = self._staging = staging.StagedInput(self.input, params.staging_depth,
                                                             group=params.batch_group_size)
        self.input.create(self.devices)
        self._input_started = False
        # The plan's index of the next update (recipe/accumulation.py): it
        # follows the input, so an update skipped as non-finite (the global
        # step stays) has still used up its batches, and the next one takes
        # the batches after them, as far as the epoch's end.
        self._next_update = 0
        if self._staging is not None:
            self._staging.start_at(0, self._position(self.total_steps))

        self.variables = variable_mgr.create(params.variable_update, self.devices, params)
        self.variables.create(self.model, optimizers.make_optimizer_factory(
            params, self.learning_rate))
        self.accumulators = (accumulate.Accumulators(self.devices, self.model.trainable_variables)
                             if self.accumulation.accumulating else None)
        self.loss_scale = precision.LossScale.from_params(params)
        # The step function (towers, exchange, finite check, update): engine/step/train_step.py.
        self._step_fn = step_lib.TrainStep(self, self._staging).fn
        self._sync_devices = runtime.sync_after_step(params)

    def _build_model(self, spec):
        """The registry's model, under --use_fp16/--use_bf16's Keras mixed policy."""
        del spec
        with tf.device("/cpu:0"), precision.policy_scope(self.params):
            return models.build(self.params.model,
                                num_classes=models.DATASET_CLASSES[self.dataset_name],
                                data_format=self.data_format)

    @property
    def global_batch_size(self):
        return self.input.global_batch or self.batch_size * len(self.devices)

    @property
    def total_steps(self):
        """The global step the run ends at: warmup + timed steps, or the epochs."""
        return self.num_warmup_batches + self.num_batches

    def _plan_steps(self):
        """(warmup, timed) step counts. With --num_epochs the warmup steps are
        part of the epochs, so every example is trained on once per epoch."""
        p = self.params
        if p.num_epochs is None:
            return p.num_warmup_batches, p.resolved_num_batches
        per_epoch = self.accumulation.updates_per_epoch
        if not per_epoch:
            raise ParamsError(f"--num_epochs={p.num_epochs}: needs the epoch length "
                              "(--data_dir, --num_examples_per_epoch, or an input with "
                              "num_examples); this input has none")
        total = p.num_epochs * per_epoch
        warmup = min(p.num_warmup_batches, total - 1)
        return warmup, total - warmup

    def step(self, outputs=0):
        """Runs one training step; returns a StepResult (float() of it is the loss).

        outputs: 1 adds the gradient norm to the extras, 2 also the summed
        gradients (the summaries ask for them on the steps they write)."""
        self._start_input(self.global_step())  # stepping without train() / begin()
        with step_lib.input_errors(self.input, self._staging,
                                   lambda: self._position(self.global_step())):
            waited = 0.0
            for phase in self._phases():
                started = time.perf_counter()
                put = self._staging.before_step() if self._staging is not None else True
                waited += time.perf_counter() - started  # priming after a fence is input wait
                try:
                    if phase == accumulate.WHOLE:
                        loss, examples, finite, extras = self._step_fn(put, outputs)
                    else:  # a micro-batch: only the update's last one outputs more
                        loss, examples, finite, extras = self._step_fn(
                            put, outputs if phase == accumulate.APPLY else 0, phase)
                    if self._sync_devices is not None:  # --sync_on_finish
                        self._sync_devices()
                except BaseException:
                    if self.accumulators is not None:  # a failed update leaves no partial sums
                        self.accumulators.reset()
                    raise
                extras = step_outputs.to_python(extras)
                if phase == accumulate.ACCUMULATE:
                    waited += extras.get("input_wait_seconds", 0.0)
            self._next_update += 1
            if "input_wait_seconds" in extras:
                extras["input_wait_seconds"] += waited
            examples = int(examples)
            correct = extras.pop("top1_correct", None)
            if correct is not None and examples:
                extras["top1"] = correct / examples
            return StepResult(float(loss), examples, bool(finite), extras)

    def global_step(self):
        """Updates applied so far (restored from checkpoints, drives schedules)."""
        return int(self.variables.iterations().numpy())

    def _phases(self):
        """The step function calls of the next update: one, or one per micro-batch."""
        if self.accumulators is None:
            return [accumulate.WHOLE]
        count = self.accumulation.micro_batches(self._next_update)
        return [accumulate.ACCUMULATE] * (count - 1) + [accumulate.APPLY]

    def _position(self, step):
        """The input's position (global batches handed out) after global step `step`."""
        return self.accumulation.batches_before(step)

    def begin(self, start_step):
        """The loop starts after global step `start_step` (0, or a resumed step)."""
        if self._staging is not None:
            self._staging.start_at(self._position(start_step), self._position(self.total_steps))
        self._start_input(start_step)

    def _start_input(self, start_step):
        """Tells the input where the run starts (a queue input starts feeding
        there); once, before the first step."""
        if not self._input_started:
            self._input_started = True
            self._next_update = start_step
            self.input.resume_after(self._position(start_step))

    def add_fence(self, step):
        """Nothing will be staged past global step `step`: a checkpoint taken
        right after it holds the input's exact position."""
        if self._staging is not None:
            self._staging.add_fence(self._position(step))

    def drain(self):
        """Stops staging; returns how many steps remain to train on what is staged.
        With accumulation the areas empty at the end of an update: staging goes
        on until that update's last micro-batch, never stopping mid-update."""
        if self._staging is None:
            return 0
        if self.accumulators is None:
            return self._staging.drain()
        if not self._staging.staged:
            return 0
        step = self._next_update
        end = self.accumulation.first_update_at_or_after(
            self._position(step) + self._staging.staged)
        self._staging.add_fence(self._position(end))
        return end - step

    def engine_variables(self):
        """Engine state that checkpoints carry besides the model: the loss scale,
        the variable manager's own (relaxed consistency's held sums)."""
        found = dict(self.variables.engine_variables())
        if self.loss_scale:
            found.update({f"loss_scale/{name}": variable
                          for name, variable in self.loss_scale.checkpoint_variables().items()})
        return found

    def staged_batches(self):
        return self._staging.staged if self._staging is not None else 0

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
        the watch of the peers (the last collective is done); safe to call twice."""
        self.input.close()
        self.variables.close()

    def header_info(self):
        """The header's (label, value) pairs (towertrain.engine.run.header)."""
        return header.training_info(self, self._synced_batch_norms)

    def train(self, write=print, eval_data=None, callbacks=()):
        """Trains to the planned total step with tf_cnn_benchmarks output; with
        --train_dir also resume, periodic saves and SIGINT/SIGTERM handling.

        eval_data: an input_pipeline EvalData for eval during training
          (default: the input's eval split). callbacks: extra
          towertrain.callbacks.Callback objects, run after the built-in ones.
        """
        from towertrain import callbacks as callbacks_lib  # callbacks know the trainer
        from towertrain.state import writable
        writable.check_run(self.params)  # before anything is written or trained
        built = callbacks_lib.default_callbacks(self, write, eval_data)
        result = loop_lib.run(self, built + list(callbacks), write)
        self.sync_model()
        return result

    def evaluate(self, eval_data=None, write=None):
        """Top-1/top-5 of the current variables over `eval_data` (default: the
        input's eval split); prints the result line when `write` is given."""
        from towertrain.engine.evaluation import evaluator as evaluation
        data = evaluation.eval_data_for(self, eval_data)
        result = evaluation.Evaluator(self).evaluate(data)
        if write is not None:
            write(evaluation.format_result(result, self.global_step()))
        return result

    # --- Library API (towertrain/__init__.py): export, save, restore. save()
    # and restore() are a portable checkpoint without the input position; an
    # exact resume is train() with Params(train_dir=...) (docs/library.md). ---
    def export(self, path):
        """Writes the trained model as a stock-Keras `.keras` file (loads with
        keras.saving.load_model without towertrain); returns that model. A model
        with layers of your own is saved as it is (load it with your classes)."""
        from towertrain.state import export as export_lib
        self.sync_model()
        return export_lib.save_stock_keras(self.model, path)

    def save(self, path):
        """Writes the model, optimizer slots, global step and loss scale to the
        checkpoint prefix `path` (portable: restores into any mode, device count
        or data format). The input position is not saved: for exact resume of the
        data use Params(train_dir=...) with train(). Returns the written path."""
        from towertrain.state import checkpoint as ckpt_lib
        return ckpt_lib.save_portable(self.model, self.variables, path,
                                      engine_variables=self.engine_variables())

    def restore(self, path):
        """Reads a checkpoint (a prefix written by save() or a train_dir's
        ckpt-N) into every copy and the Keras model; a checkpoint of another
        model fails naming the missing and unexpected variables."""
        from towertrain.state import checkpoint as ckpt_lib
        ckpt_lib.restore_portable(self.model, self.variables, path,
                                  engine_variables=self.engine_variables())
        self.sync_model()
        self._next_update = self.global_step()
        if self._staging is not None:  # staged batches belong to the old position
            self._staging.start_at(self._position(self.global_step()),
                                   self._position(self.total_steps))
