"""The trainer: devices, variables, input and the step function, wired together.

    trainer = Trainer(Params(model="resnet20", num_gpus=2, device="cpu",
                             variable_update="replicated"))
    result = trainer.train()

The step is one tf.function: every tower runs under its device on its slice,
then, if every loss and gradient is finite, the variable manager exchanges
gradients and applies one update. The loop around it lives in
towertrain.loop; features (logging, checkpoints, eval) are callbacks.
"""
import collections
import contextlib
import functools

import keras
import tensorflow as tf

from towertrain import devices as devices_lib, models, tower, variable_mgr
from towertrain import loop as loop_lib, staging
from towertrain.errors import TrainingDivergedError  # noqa: F401 - re-exported
from towertrain.input_pipeline import factory as input_factory
from towertrain.input_pipeline.arrays import InputError
from towertrain.loop import TrainResult  # noqa: F401 - re-exported
from towertrain.optimizers import make_optimizer_factory
from towertrain.params import ParamsError


class StepResult(collections.namedtuple("StepResult", "loss examples finite")):
    """One step: its loss, the examples it trained on, and whether every loss
    and gradient was finite (if not, nothing was applied). float() gives the loss."""

    def __float__(self):
        return float(self.loss)


def _empty_tower(trainable, non_trainable):
    """What a tower with no examples contributes: nothing (zero loss and
    gradients, batch-norm statistics passed through unchanged)."""
    return tower.TowerResult(tf.constant(0.0), [tf.zeros_like(v) for v in trainable],
                             [tf.identity(v) for v in non_trainable])


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
        self.devices = devices_lib.tower_devices(params.resolved_device, params.num_gpus,
                                                 check=check_devices)
        spec = models.get_spec(params.model)
        self.data_format = params.resolved_data_format
        if check_devices:
            devices_lib.check_data_format(params.resolved_device, self.data_format)
        self.batch_size = params.batch_size or spec.default_batch_size
        self.dataset_name = params.data_name or spec.default_dataset
        keras.utils.set_random_seed(params.tf_random_seed)
        with tf.device("/cpu:0"):
            self.model = model or models.build(
                params.model, num_classes=models.DATASET_CLASSES[self.dataset_name],
                data_format=self.data_format)
        self.loss_fn = loss_fn or tower.sparse_softmax_cross_entropy
        # Which variables get L2 decay: the registered model's rule, or the
        # default rule (kernels only) for a model passed in.
        self.decay_mask = models.weight_decay_mask(self.model,
                                                   None if model is not None else params.model)
        self.learning_rate = params.init_learning_rate or spec.default_learning_rate
        self._seed_states = tower.seed_state_indices(self.model)

        self.input = input_source or input_factory.make_input(
            params, image_shape=self.model.input_shape[1:],
            num_classes=self.model.output_shape[-1],
            global_batch=self.batch_size * len(self.devices), data_format=self.data_format,
            dataset_name=self.dataset_name)
        self.num_warmup_batches, self.num_batches = self._plan_steps()
        # The staging wrapper when staging is on, else None: the one place that decides.
        self._staging = None
        if params.staging_depth > 0 and self.input.stage:
            self.input = self._staging = staging.StagedInput(self.input, params.staging_depth)
        self.input.create(self.devices)
        if self._staging is not None:
            self._staging.start_at(0, self.total_steps)

        self.variables = variable_mgr.create(params.variable_update, self.devices, params)
        self.variables.create(self.model, make_optimizer_factory(
            params.optimizer, self.learning_rate, params.momentum))
        self._step_fn = tf.function(self._train_step)
        if self._staging is not None:
            # Steps before a fence or the end only drain (put=False). Trace that
            # variant now: traced on first use it would stall a timed step
            # (measured: ~100 ms).
            for put in (True, False):
                self._step_fn.get_concrete_function(put)

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
        per_epoch = self.input.steps_per_epoch
        if not per_epoch:
            raise ParamsError(f"--num_epochs={p.num_epochs}: needs finite data "
                              "(--data_dir, or an input with num_examples); this input "
                              "has no epoch length")
        total = p.num_epochs * per_epoch
        warmup = min(p.num_warmup_batches, total - 1)
        return warmup, total - warmup

    def _train_step(self, put=True):
        if self._staging is not None:
            batches = self._staging.tower_batches(self.devices, put=put)
        else:
            batches = self.input.tower_batches(self.devices)
        synchronous = self.variables.synchronous
        with tf.device("/cpu:0"):
            global_count = tf.add_n([tf.shape(images)[0] for images, _ in batches])
        results, finite = [], []
        for i, (device, (images, labels)) in enumerate(zip(self.devices, batches)):
            if images.shape[0] == 0:  # statically empty slice: nothing to compute
                results.append(None)
                continue
            with tf.device(device), tf.name_scope(f"tower_{i}"):
                trainable, non_trainable = self.variables.tower_inputs(i)
                non_trainable = tower.offset_seed_states(non_trainable, self._seed_states, i)
                denominator = global_count if synchronous else tf.shape(images)[0]
                compute = functools.partial(
                    tower.compute_tower, self.model, trainable, non_trainable, images,
                    labels, denominator, self.loss_fn, self.params.weight_decay,
                    self.decay_mask)
                if images.shape[0] is None:
                    # A dynamic slice (the last partial batch) may be empty at run
                    # time: the guard gives zero gradients and unchanged batch-norm
                    # statistics instead of NaN stats from a 0-example batch.
                    result = tf.cond(tf.shape(images)[0] > 0, compute,
                                     functools.partial(_empty_tower, trainable, non_trainable))
                else:
                    result = compute()
                result = result._replace(non_trainable=tower.offset_seed_states(
                    result.non_trainable, self._seed_states, i, undo=True))
                finite.append(tower.all_finite(result))
                results.append(result)
        with tf.device("/cpu:0"):
            all_finite = tf.reduce_all(tf.stack(finite))

        def update():
            self.variables.apply([r.grads if r else None for r in results],
                                 [r.non_trainable if r else None for r in results])
            return tf.constant(True)

        # A non-finite loss or gradient anywhere applies nothing, on every copy:
        # the decision is one boolean, so replicas cannot diverge.
        tf.cond(all_finite, update, lambda: tf.constant(False))
        losses = [r.loss for r in results if r is not None]
        with tf.device("/cpu:0"):
            total = tf.add_n(losses)
            loss = total if synchronous else total / len(losses)
            return loss, global_count, all_finite

    def step(self):
        """Runs one training step; returns a StepResult (float() of it is the loss)."""
        with self._input_errors():
            put = self._staging.before_step() if self._staging is not None else True
            loss, examples, finite = self._step_fn(put)
            return StepResult(float(loss), int(examples), bool(finite))

    def global_step(self):
        """Updates applied so far (restored from checkpoints, drives schedules)."""
        return int(self.variables.iterations().numpy())

    def begin(self, start_step):
        """The loop starts after global step `start_step` (0, or a resumed step)."""
        if self._staging is not None:
            self._staging.start_at(start_step, self.total_steps)

    def add_fence(self, step):
        """Nothing will be staged past global step `step`: a checkpoint taken
        right after it holds the input's exact position."""
        if self._staging is not None:
            self._staging.add_fence(step)

    def drain(self):
        """Stops staging; returns how many steps remain to train on what is staged."""
        return self._staging.drain() if self._staging is not None else 0

    def staged_batches(self):
        return self._staging.staged if self._staging is not None else 0

    @contextlib.contextmanager
    def _input_errors(self):
        """Keeps staging consistent after any failure in a step, and turns a data
        error from a file-backed input into an InputError naming the data."""
        try:
            yield
        except BaseException as err:
            if self._staging is not None:
                self._staging.recover(self.global_step())
            if isinstance(err, (tf.errors.OutOfRangeError, tf.errors.CancelledError)):
                # A queue input whose feeder thread failed closes its queue: say why.
                self.input.raise_pending_error()
            elif isinstance(err, (tf.errors.InvalidArgumentError, tf.errors.DataLossError)):
                if self.input.description:
                    raise InputError(f"bad input data in {self.input.description}: "
                                     f"{err.message}") from err
            raise

    def trace_step(self):
        """The step's concrete function, traced but not run (graph inspection)."""
        return self._step_fn.get_concrete_function(True)

    def sync_model(self):
        """Writes the trained values (the primary copy) into the Keras model, so
        `trainer.model.predict` and saving the model see the training."""
        trainable, non_trainable = self.variables.primary_variables()
        for target, source in zip(self.model.trainable_variables, trainable):
            target.assign(source.value)
        for target, source in zip(self.model.non_trainable_variables, non_trainable):
            target.assign(source.value)

    def close(self):
        """Clears the staging areas and stops the input's threads; safe to call twice."""
        self.input.close()

    def header_info(self):
        p = self.params
        info = [
            ("TensorFlow", tf.__version__),
            ("Model", self.model.name),
            ("Dataset", f"{self.dataset_name} ({self.input.name})"),
            ("Mode", "training"),
            ("Batch size", [f"{self.global_batch_size} global",
                            f"{self.global_batch_size / len(self.devices):g} per device"]),
            ("Num batches", self.num_batches),
            ("Devices", str(self.devices)),
            ("Data format", self.data_format),
            ("Optimizer", p.optimizer),
            ("Variables", p.variable_update),
        ]
        if p.variable_update == "replicated":
            info.append(("AllReduce", p.resolved_all_reduce_spec))
        return info

    def train(self, write=print, eval_data=None, callbacks=()):
        """Trains to the planned total step with tf_cnn_benchmarks output; with
        --train_dir also resume, periodic saves and SIGINT/SIGTERM handling.

        eval_data: an input_pipeline EvalData for eval during training
          (default: the input's eval split). callbacks: extra
          towertrain.callbacks.Callback objects, run after the built-in ones.
        """
        from towertrain import callbacks as callbacks_lib  # callbacks know the trainer
        built = callbacks_lib.default_callbacks(self, write, eval_data)
        result = loop_lib.run(self, built + list(callbacks), write)
        self.sync_model()
        return result

    def evaluate(self, eval_data=None, write=None):
        """Top-1/top-5 of the current variables over `eval_data` (default: the
        input's eval split); prints the result line when `write` is given."""
        from towertrain import evaluation
        data = eval_data or evaluation.eval_data_for(self)
        result = evaluation.Evaluator(self).evaluate(data)
        if write is not None:
            write(evaluation.format_result(result, self.global_step()))
        return result
