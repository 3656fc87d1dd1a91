"""The training header's facts: (label, value) pairs the step printer lays out
(towertrain.engine.run.benchmark_log.header_lines), in tf_cnn_benchmarks' order.

The run plan decides most lines (towertrain.plan.describe); the others need
what only exists once the run is built: the model, the input, the learning
rate schedule, the loss scale, TensorFlow's thread pool and the devices'
precision support."""
import tensorflow as tf

from towertrain.engine.process import runtime
from towertrain.engine.allreduce import packing
from towertrain.engine.feed import input_factory
from towertrain.plan import cluster as resolvers
from towertrain.recipe import gradients
from towertrain.recipe import optimizers
from towertrain.recipe import native_precision
from towertrain.recipe import precision


def training_info(plan, model, input_source, learning_rate, loss_scale=None,
                  precision_support=None, synced_batch_norms=0, input_origin=None):
    """The header of a training run of `plan`. model: the Keras model trained;
    input_source: its Input (named in the Dataset line); learning_rate: the
    recipe's schedule; loss_scale: the LossScale or None; precision_support:
    what native_precision.check found of the devices (None: not checked);
    synced_batch_norms: how many batch-norm layers --sync_batch_norm
    synchronizes; input_origin: where a user's own input comes from."""
    static = plan.describe()
    recipe = plan.recipe
    info = [
        ("TensorFlow", tf.__version__),
        ("Model", model.name),
        # A user's own input is named as such, not as the model's default dataset.
        ("Dataset", f"{input_origin or plan.dataset} ({input_source.name})"),
        ("Mode", "training"),
        ("Batch size", static["Batch size"]),
        ("Num batches", static["Num batches"]),
        ("Devices", static["Devices"]),
        ("Data format", static["Data format"]),
        ("Optimizer", optimizers.describe(recipe.optimizer)),
        ("Learning rate", learning_rate.describe()),
        ("Variables", static["Variables"]),
    ]
    if "Cluster" in static:  # multi-worker
        info.append(("Cluster", f"{static['Cluster']}, "
                                f"{resolvers.describe(plan.topology.cluster)}"))
        info.append(("Worker input", input_factory.describe_worker_input(input_source)))
        threads = runtime.describe_threads(plan.runtime)
        if threads:
            info.append(("Threads", threads))
    if "Accumulation" in static:
        info.append(("Accumulation", static["Accumulation"]))
    if "AllReduce" in static:
        info.append(("AllReduce", static["AllReduce"]))
        if "Collectives" in static:
            info.append(("Collectives", static["Collectives"]))
        info.append(("Gradient packs", packing.describe(model.trainable_variables,
                                                         plan.exchange.gradient_repacking)))
    if gradients.describe(recipe.clipping):
        info.append(("Gradient clip", gradients.describe(recipe.clipping)))
    if synced_batch_norms:
        info.append(("Batch norm", f"synchronized over the global batch "
                                   f"({synced_batch_norms} layers)"))
    native = precision_support and native_precision.describe(precision_support,
                                                             plan.topology.device)
    info.extend(precision.header_info(recipe.precision, loss_scale, native))
    return info
