"""The trainer: devices, variables, input and the step function, wired together.

    trainer = Trainer(Params(model="resnet20", num_gpus=2, device="cpu",
                             variable_update="replicated"))
    result = trainer.train()

The step is one tf.function: every tower runs under its device on its slice,
then the variable manager exchanges gradients and applies one update.
"""
import collections
import contextlib
import functools
import math

import keras
import tensorflow as tf

from towertrain import benchmark_log, devices as devices_lib, models, tower, variable_mgr
from towertrain import staging
from towertrain.input_pipeline import factory as input_factory
from towertrain.input_pipeline.arrays import InputError
from towertrain.params import ParamsError
from towertrain.optimizers import make_optimizer_factory

TrainResult = collections.namedtuple("TrainResult", "images_per_sec final_loss steps")


def _empty_tower(trainable, non_trainable):
    """What a tower with no examples contributes: nothing (zero loss and
    gradients, batch-norm statistics passed through unchanged)."""
    return tower.TowerResult(tf.constant(0.0), [tf.zeros_like(v) for v in trainable],
                             [tf.identity(v) for v in non_trainable])


class TrainingDivergedError(RuntimeError):
    """The loss became NaN or Inf; nothing from that step is kept."""


class Trainer:
    """Builds everything a run needs from a Params.

    model: a keras.Model to train instead of building `params.model` from the
      registry. It must accept images in the run's data format.
    input_source: an object with create(devices) and tower_batches(devices)
      (see towertrain.input_pipeline); default: synthetic data per device.
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

        self.input = input_source or input_factory.make_input(
            params, image_shape=self.model.input_shape[1:],
            num_classes=self.model.output_shape[-1],
            global_batch=self.batch_size * len(self.devices), data_format=self.data_format,
            dataset_name=self.dataset_name)
        self.num_warmup_batches, self.num_batches = self._plan_steps()
        # The staging wrapper when staging is on, else None: the one place that decides.
        self._staging = None
        if params.staging_depth > 0 and getattr(self.input, "stage", True):
            self.input = self._staging = staging.StagedInput(self.input, params.staging_depth)
            self.input.create(self.devices,
                              total_steps=self.num_warmup_batches + self.num_batches)
        else:
            self.input.create(self.devices)

        self.variables = variable_mgr.create(params.variable_update, self.devices, params)
        self.variables.create(self.model, make_optimizer_factory(
            params.optimizer, self.learning_rate, params.momentum))
        self._step_fn = tf.function(self._train_step)
        if self._staging is not None:
            # The last `depth` steps only drain (put=False). Trace that variant
            # now: traced on first use it would stall the end of the run
            # (measured: ~100 ms, inside the timed steps).
            for put in (True, False):
                self._step_fn.get_concrete_function(put)

    @property
    def global_batch_size(self):
        return getattr(self.input, "global_batch", None) or self.batch_size * len(self.devices)

    def _plan_steps(self):
        """(warmup, timed) step counts. With --num_epochs the warmup steps are
        part of the epochs, so every example is trained on once per epoch."""
        p = self.params
        if p.num_epochs is None:
            return p.num_warmup_batches, p.num_batches
        per_epoch = getattr(self.input, "steps_per_epoch", None)
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
        results = []
        for i, (device, (images, labels)) in enumerate(zip(self.devices, batches)):
            if images.shape[0] == 0:  # statically empty slice: nothing to compute
                results.append(None)
                continue
            with tf.device(device), tf.name_scope(f"tower_{i}"):
                trainable, non_trainable = self.variables.tower_inputs(i)
                denominator = global_count if synchronous else tf.shape(images)[0]
                compute = functools.partial(
                    tower.compute_tower, self.model, trainable, non_trainable, images,
                    labels, denominator, self.loss_fn, self.params.weight_decay,
                    self.decay_mask)
                if images.shape[0] is None:
                    # A dynamic slice (the last partial batch) may be empty at run
                    # time: the guard gives zero gradients and unchanged batch-norm
                    # statistics instead of NaN stats from a 0-example batch.
                    results.append(tf.cond(
                        tf.shape(images)[0] > 0, compute,
                        functools.partial(_empty_tower, trainable, non_trainable)))
                else:
                    results.append(compute())
        self.variables.apply([r.grads if r else None for r in results],
                             [r.non_trainable if r else None for r in results])
        losses = [r.loss for r in results if r is not None]
        with tf.device("/cpu:0"):
            total = tf.add_n(losses)
            return total if synchronous else total / len(losses)

    def step(self):
        """Runs one training step; returns the loss as a scalar tensor."""
        with self._input_errors():
            # The first before_step() primes the staging areas.
            put = self._staging.before_step() if self._staging is not None else True
            return self._step_fn(put)

    @contextlib.contextmanager
    def _input_errors(self):
        """A data error from a file-backed input becomes an InputError naming
        the data; TensorFlow's own message says which record failed."""
        try:
            yield
        except (tf.errors.OutOfRangeError, tf.errors.CancelledError):
            # A queue input whose feeder thread failed closes its queue: report why.
            getattr(self.input, "raise_feeder_error", lambda: None)()
            raise
        except (tf.errors.InvalidArgumentError, tf.errors.DataLossError) as err:
            where = getattr(self.input, "description", None)
            if not where:
                raise
            raise InputError(f"bad input data in {where}: {err.message}") from err

    def trace_step(self):
        """The step's concrete function, traced but not run (graph inspection)."""
        return self._step_fn.get_concrete_function(True)

    def close(self):
        """Clears the staging areas (what was staged but not trained on)."""
        if self._staging is not None:
            self._staging.clear()

    def header_info(self):
        p = self.params
        source = getattr(self.input, "name", type(self.input).__name__)
        info = [
            ("TensorFlow", tf.__version__),
            ("Model", self.model.name),
            ("Dataset", f"{self.dataset_name} ({source})"),
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

    def train(self, write=print, eval_dataset=None):
        """Warmup steps, then num_batches timed steps with tf_cnn_benchmarks output;
        with --train_dir also resume, periodic saves and SIGINT/SIGTERM handling
        (towertrain.run_loop)."""
        from towertrain import run_loop  # deferred: run_loop imports this module
        return run_loop.train(self, write, eval_dataset=eval_dataset)

    def _checked_step(self):
        loss = float(self.step())
        if not math.isfinite(loss):
            raise TrainingDivergedError(
                f"loss is {loss} at step {int(self.variables.iterations().numpy())}; "
                "stopped without saving this step's state; "
                f"try a lower --init_learning_rate (now {self.learning_rate:g}) "
                "or, with loss scaling, a lower loss scale")
        return loss
