"""The run plan's sections: frozen values each part of the engine receives.

Each section holds what one concern needs, worked out once (towertrain.plan
builds them): a part takes its section, or a few values of it, never the
Params. Field names follow the flags they come from, so a value is found by
its flag's name. A section whose fields are settings is declared beside the
component that reads it (its settings.py), with its checks; this module keeps
the sections worked out from several (Topology, Batches, Steps, Recipe,
Outputs) and names the others too.
"""
import dataclasses
from typing import Optional, Tuple

from towertrain.config.cluster_spec import SINGLE, Cluster
# Sections declared beside their reader; importable here too.
from towertrain.engine.evaluation.settings import Evaluation
from towertrain.engine.exchange_settings import Exchange  # noqa: F401
from towertrain.engine.feed.settings import InputPlan  # noqa: F401
from towertrain.engine.process.settings import Runtime  # noqa: F401
from towertrain.engine.run.settings import Display, Observe
from towertrain.recipe.settings import (  # noqa: F401
    Clipping, Loss, Optimizer, Precision)
from towertrain.state.settings import Checkpoints

frozen = dataclasses.dataclass(frozen=True)


@frozen
class Topology:
    """Where the towers run: the cluster, this process's devices, the layout."""
    device: str  # "cpu" or "gpu": the tower device type
    tower_devices: Tuple[str, ...]  # this process's towers, e.g. ("/cpu:0", "/cpu:1")
    parameter_device: str  # parameter_server: "cpu" or "gpu"
    data_format: str  # "NCHW" or "NHWC"
    device_given: bool = True  # --device was given (else the machine's default)
    gpu_indices: Optional[Tuple[int, ...]] = None  # --gpu_indices, parsed
    cluster: Cluster = SINGLE

    @property
    def num_towers(self) -> int:
        """Towers in this process."""
        return len(self.tower_devices)

    @property
    def num_workers(self) -> int:
        return self.cluster.num_workers

    @property
    def is_chief(self) -> bool:
        return self.cluster.is_chief

    @property
    def global_tower_indices(self) -> Tuple[int, ...]:
        """Each local tower's index among all the cluster's towers."""
        first = self.cluster.task_index * self.num_towers
        return tuple(range(first, first + self.num_towers))


@frozen
class Batches:
    """Examples per step, at each level."""
    per_device: int
    per_process: int  # this process's towers together
    global_batch: int  # one step of the whole cluster (one micro-batch)
    eval_per_device: int
    accumulation_steps: int = 1
    global_batch_size: Optional[int] = None  # --global_batch_size (per_update), when given

    @property
    def per_update(self) -> int:
        """Examples of one update: the global batch times the accumulation."""
        return self.global_batch * self.accumulation_steps

    @property
    def eval_per_process(self) -> int:
        """Examples per eval batch: the eval batch per device on each local tower."""
        return self.eval_per_device * (self.per_process // self.per_device)


@frozen
class Steps:
    """How long the run is, in global steps (updates), and when it evaluates."""
    warmup: int
    timed: int
    num_epochs: Optional[int]  # --num_epochs (None: warmup + timed steps)
    batches_per_epoch: Optional[int]  # global batches (None: no epoch length)
    accumulation: "object"  # towertrain.plan.accumulation.AccumulationPlan
    eval_schedule: Optional["object"] = None  # towertrain.plan.eval_schedule.EvalSchedule
    # Where the epoch length came from (the header's Epoch line): examples per
    # epoch (None: the input gives batches only) and the source's words.
    epoch_examples: Optional[int] = None
    epoch_source: Optional[str] = None

    @property
    def total(self) -> int:
        """The global step the run ends at."""
        return self.warmup + self.timed

    @property
    def updates_per_epoch(self) -> Optional[int]:
        return self.accumulation.updates_per_epoch


@frozen
class Recipe:
    """What one update does: optimizer, learning rate, precision, loss, clipping."""
    optimizer: Optimizer
    learning_rate: "object"  # towertrain.plan.learning_rate.schedule.LearningRate
    precision: Precision
    loss: Loss
    clipping: Clipping
    seed: int  # --tf_random_seed


@frozen
class Outputs(Display, Observe, Checkpoints, Evaluation):
    """What the run shows and writes: display, summaries, checkpoints, traces,
    logs and evaluation, each declared beside its reader (the bases)."""
    loss_type_to_report: str = "total_loss"  # the recipe's Loss, for the step lines

    @property
    def logdir(self) -> Optional[str]:
        """Where summaries and profiles go."""
        return self.summary_dir or self.train_dir
