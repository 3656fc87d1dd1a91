"""The run plan: what a run will do, worked out once from Params and the facts
of the machine, the model and the input, before any graph is built.

    layout = plan.lay_out(params, machine, cluster, model_spec)   # no input yet
    run_plan = plan.build(params, layout, input_facts)            # frozen, complete

`lay_out` gives what the model and the input are built from (devices, data
format, batch per device, runtime, exchange, what to read); `build` adds what
needs the input's length (batches, steps, epochs, the eval and learning-rate
schedules). Every part of the engine receives a section of the plan, or a few
of its values, never the Params: a fact is derived here, once, so two parts
cannot count it differently (an epoch under accumulation is its updates, for
the eval schedule and the learning rate alike).

Pure Python: no TensorFlow or Keras here, so the plan and its checks run and
are tested without them.
"""
import dataclasses
import math
from typing import Optional

from towertrain import models
from towertrain.config import machine as machine_lib
from towertrain.config.declare import take as _take  # a section from Params' same-named fields
from towertrain.engine.exchange_settings import ExchangeSettings
from towertrain.engine.feed.settings import InputSettings
from towertrain.engine.process.settings import Devices, ProcessSettings
from towertrain.plan import accumulation as accumulation_lib
from towertrain.plan import cluster as cluster_lib
from towertrain.plan import describe
from towertrain.plan import global_batch as global_batch_lib
from towertrain.plan.learning_rate import model_recipe
from towertrain.plan.learning_rate import schedule as schedule_lib
from towertrain.plan.learning_rate import source as lr_source
from towertrain.plan import steps as steps_lib
from towertrain.plan.sections import (Batches, Clipping, Exchange, InputPlan, Loss,
                                      Optimizer, Outputs, Precision, Recipe, Runtime,
                                      Steps, Topology)

__all__ = ["InputFacts", "Layout", "RunPlan", "build", "lay_out", "Batches", "Exchange",
           "InputPlan", "Outputs", "Recipe", "Runtime", "Steps", "Topology"]


@dataclasses.dataclass(frozen=True)
class InputFacts:
    """What the plan needs to know of the input it will train on."""
    steps_per_epoch: Optional[int] = None  # global batches per epoch
    global_batch: Optional[int] = None  # the input's own global batch, if it sets one
    num_examples: Optional[int] = None  # examples per epoch, where the input knows them
    synthetic: bool = False  # the plan's synthetic data (stands in for the dataset)
    # A user's input (Trainer(input_source=...)): how messages name it (from_arrays,
    # ...), and whether it was built with its own epochs (from_arrays(num_epochs=K),
    # repeat=False, ...: its partial batches are the ones asked for). None, False:
    # the plan's own input (synthetic data or --data_dir).
    user_input: Optional[str] = None
    user_epochs: bool = False

    @classmethod
    def of(cls, input_source, user_input=None, user_epochs=False):
        return cls(getattr(input_source, "steps_per_epoch", None),
                   getattr(input_source, "global_batch", None),
                   getattr(input_source, "num_examples", None),
                   getattr(input_source, "name", None) == "synthetic",
                   user_input, user_epochs)


@dataclasses.dataclass(frozen=True)
class Layout:
    """The first half of the plan: what the model and the input are built from."""
    model: str
    dataset: str
    topology: Topology
    runtime: Runtime
    exchange: Exchange
    input: InputPlan
    outputs: Outputs
    precision: Precision
    batch_per_device: int
    eval_batch_per_device: int
    base_learning_rate: float
    # The model's own learning-rate recipe and which rate the run trains with
    # (towertrain.plan.learning_rate.source.source_of: flags, recipe, model or kept).
    learning_rate_recipe: Optional[object] = None
    learning_rate_source: str = "model"
    # How the global batch is cut over this topology (towertrain.plan.global_batch).
    batch_split: Optional[global_batch_lib.Split] = None
    # A Keras model passed to the Trainer: the registry's default model
    # (params.resolved_model) lends its defaults, but is never named as the model.
    user_model: bool = False

    @property
    def accumulation_steps(self):
        return self.batch_split.accumulation if self.batch_split else 1


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """The whole plan of a run (sections in towertrain.plan.sections)."""
    model: str
    dataset: str
    topology: Topology
    batches: Batches
    steps: Steps
    recipe: Recipe
    exchange: Exchange
    runtime: Runtime
    input: InputPlan
    outputs: Outputs

    def describe(self):
        """The header's static lines, by label (towertrain.plan.describe)."""
        return describe.static_lines(self)


def topology_of(params, machine, cluster) -> Topology:
    devices = _take(Devices, params)
    device = devices.device or machine.default_device
    indices = devices.indices()
    return Topology(
        device=device, tower_devices=tuple(f"/{device}:{i}" for i in indices),
        parameter_device=devices.local_parameter_device or device,
        data_format=devices.data_format or ("NCHW" if device == "gpu" else "NHWC"),
        device_given=devices.device is not None,
        gpu_indices=indices if devices.gpu_indices else None, cluster=cluster)


def runtime_of(params, topology, machine) -> Runtime:
    return Runtime.of(_take(ProcessSettings, params), params.device, topology.device,
                      workers_on_host=topology.cluster.workers_on_this_host(),
                      cores=machine.cores, towers=len(topology.tower_devices))


def exchange_of(params, topology, machine) -> Exchange:
    # Several towers on a machine of one GPU: logical GPUs of it (devices.split_gpu).
    split = (topology.num_towers if topology.device == "gpu" and topology.num_towers > 1
             and machine.gpus == 1 else 0)
    return Exchange.of(_take(ExchangeSettings, params), topology.device,
                       topology.parameter_device, _take(Precision, params).half,
                       params.xla_compile, params.collective_timeout_secs,
                       params.collective_implementation, split_towers=split)


def lay_out(params, machine=None, cluster=None, model_spec=None, user_model=False) -> Layout:
    """The first half of the plan. machine: the machine's facts (default: probed
    once per process); cluster: the run's (default: resolved once per process);
    model_spec: the registered model's defaults (batch size, learning rate,
    dataset; default: --model's entry in the registry); user_model: a Keras
    model passed to the Trainer trains (the header names no registry model)."""
    if cluster is None:  # first: a Slurm task's own GPUs are set before the probe
        cluster = cluster_lib.resolve(params)
    machine = machine or machine_lib.probe()
    if model_spec is None:
        model_spec = models.get_spec(params.resolved_model)
    topology = topology_of(params, machine, cluster)
    dataset = params.data_name or model_spec.default_dataset
    _take(InputSettings, params).refuse_for(dataset)
    batch_split = global_batch_lib.split(
        params.global_batch_size, params.batch_size, params.gradient_accumulation_steps,
        topology.num_workers, topology.num_towers, model_spec.default_batch_size)
    per_device = batch_split.per_device
    recipe = getattr(model_spec, "learning_rate_recipe", None)
    source = lr_source.source_of(params, recipe)
    if source == "recipe" and lr_source.recorded_before_recipes(params.train_dir):
        source = "kept"
    if source == "recipe":
        lr_source.check_flags(params, params.resolved_model, recipe)
    return Layout(
        model=params.resolved_model, dataset=dataset, topology=topology,
        runtime=runtime_of(params, topology, machine),
        exchange=exchange_of(params, topology, machine),
        input=_take(InputPlan, params, data_name=dataset, seed=params.tf_random_seed),
        outputs=_take(Outputs, params), precision=_take(Precision, params),
        batch_per_device=per_device,
        eval_batch_per_device=params.eval_batch_size or per_device,
        base_learning_rate=params.init_learning_rate or model_spec.default_learning_rate,
        learning_rate_recipe=recipe, learning_rate_source=source, batch_split=batch_split,
        user_model=user_model)


def build(params, layout: Layout, input_facts: InputFacts = InputFacts()) -> RunPlan:
    """The whole plan: the layout plus what needs the input's length."""
    topology = layout.topology
    per_process = layout.batch_per_device * topology.num_towers
    global_batch = input_facts.global_batch or per_process
    accumulation_steps = layout.accumulation_steps
    batches = Batches(per_device=layout.batch_per_device, per_process=per_process,
                      global_batch=global_batch,
                      eval_per_device=layout.eval_batch_per_device,
                      accumulation_steps=accumulation_steps,
                      global_batch_size=params.global_batch_size)
    steps_lib.check_batch_fits_epoch(
        params, input_facts, global_batch,
        (layout.batch_per_device, topology.num_towers, topology.num_workers))
    steps = steps_lib.plan_steps(params, input_facts, global_batch, layout.dataset,
                                 accumulation_steps)
    recipe = Recipe(
        optimizer=_take(Optimizer, params),
        learning_rate=_learning_rate(params, layout, input_facts, batches, steps),
        precision=layout.precision, loss=_take(Loss, params),
        clipping=_take(Clipping, params), seed=params.tf_random_seed)
    return RunPlan(model=layout.model, dataset=layout.dataset, topology=topology,
                   batches=batches, steps=steps, recipe=recipe, exchange=layout.exchange,
                   runtime=layout.runtime, input=layout.input, outputs=layout.outputs)


def _learning_rate(params, layout, input_facts, batches, steps):
    """The run's LearningRate (towertrain.plan.learning_rate.source says which)."""
    source, topology = layout.learning_rate_source, layout.topology
    examples, origin = model_recipe.epoch_of(params, input_facts, steps, layout.dataset,
                                             batches.global_batch)
    if source == "recipe":
        return model_recipe.learning_rate(
            layout.learning_rate_recipe, layout.model, batches.per_update, examples, origin,
            params.variable_update, topology.num_towers, topology.num_workers,
            per_device=batches.per_device)
    steps_per_epoch, epoch_text = steps.updates_per_epoch, None
    if steps_per_epoch is None and examples is not None and input_facts.synthetic:
        # Synthetic data stands in for its dataset: its known size, as --num_epochs.
        steps_per_epoch = accumulation_lib.AccumulationPlan(
            batches.accumulation_steps,
            math.ceil(examples / batches.global_batch)).updates_per_epoch
        epoch_text = f"{examples:,} examples: {origin}"
    rate = schedule_lib.learning_rate(params, layout.base_learning_rate,
                                      global_batch=batches.per_update,
                                      steps_per_epoch=steps_per_epoch, total_steps=steps.total)
    return dataclasses.replace(rate, source=source, epoch_text=epoch_text,
                               origin=lr_source.origin_of(params, layout.model, source,
                                                          params.train_dir,
                                                          layout.user_model))
