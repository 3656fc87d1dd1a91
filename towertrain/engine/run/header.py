"""The training header's facts: (label, value) pairs the step printer lays out
(towertrain.engine.run.benchmark_log.header_lines), in tf_cnn_benchmarks' order."""
import tensorflow as tf

from towertrain.engine.process import runtime
from towertrain.engine.allreduce import packing
from towertrain.recipe import gradients
from towertrain.recipe import optimizers
from towertrain.recipe import native_precision
from towertrain.recipe import precision


def training_info(trainer, synced_batch_norms=0):
    """The header of a training run by `trainer`; synced_batch_norms: how many
    batch-norm layers --sync_batch_norm synchronizes."""
    p = trainer.params
    devices, workers = trainer.devices, trainer.num_workers
    info = [
        ("TensorFlow", tf.__version__),
        ("Model", trainer.model.name),
        # A user's own input is named as such, not as the model's default dataset.
        ("Dataset", f"{getattr(trainer, 'input_origin', None) or trainer.dataset_name} "
                    f"({trainer.input.name})"),
        ("Mode", "training"),
        ("Batch size", [f"{trainer.global_batch_size} global",
                        f"{trainer.global_batch_size / len(devices) / workers:g}"
                        " per device"]),
        ("Num batches", _num_batches(trainer)),
        ("Devices", str(devices)),
        ("Data format", trainer.data_format),
        ("Optimizer", optimizers.describe(p)),
        ("Learning rate", trainer.learning_rate.describe()),
        ("Variables", p.variable_update),
    ]
    if workers > 1:  # multi-worker
        cluster = trainer.cluster
        from towertrain.plan import cluster as resolvers
        info.append(("Cluster", f"{workers} workers x {len(devices)} "
                                f"devices, {resolvers.describe(cluster)}"))
        threads = runtime.describe_threads(trainer.plan.runtime)
        if threads:
            info.append(("Threads", threads))
    if trainer.accumulation.accumulating:
        info.append(("Accumulation", trainer.accumulation.describe(trainer.global_batch_size)))
    if p.variable_update in ("replicated", "collective_all_reduce"):
        info.append(("AllReduce", p.resolved_all_reduce_spec))
        info.append(("Gradient packs", packing.describe(trainer.model.trainable_variables,
                                                         p.gradient_repacking)))
    if gradients.describe(p):
        info.append(("Gradient clip", gradients.describe(p)))
    if synced_batch_norms:
        info.append(("Batch norm", f"synchronized over the global batch "
                                   f"({synced_batch_norms} layers)"))
    support = getattr(trainer, "precision_support", None)
    info.extend(precision.header_info(p, trainer.loss_scale, support and native_precision.describe(
        support, p.resolved_device)))
    return info


def _num_batches(trainer):
    """The timed steps; in an epoch run also what they are part of, since the
    warmup steps come out of the epochs."""
    p = trainer.params
    if p.num_epochs is None:
        return trainer.num_batches
    return [f"{trainer.num_batches} timed",
            f"of {trainer.total_steps} steps ({p.num_epochs} epochs; the first "
            f"{trainer.num_warmup_batches} are warmup, untimed)"]
