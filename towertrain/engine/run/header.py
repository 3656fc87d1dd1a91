"""The training header's facts: (label, value) pairs the step printer lays out
(towertrain.engine.run.benchmark_log.header_lines), in tf_cnn_benchmarks' order.

The run plan decides most lines (towertrain.plan.describe); the others need
what only exists once the run is built: the model, the input, the learning
rate schedule, the loss scale, TensorFlow's thread pool and the devices'
precision support."""
import tensorflow as tf

from towertrain.engine.process import devices as devices_lib
from towertrain.engine.process import runtime
from towertrain.engine.exchange import packing
from towertrain.engine.feed import input_factory
from towertrain.plan import cluster as resolvers
from towertrain.recipe import gradients
from towertrain.recipe import optimizers
from towertrain.recipe import native_precision
from towertrain.recipe import precision


def training_info(plan, model, input_source, learning_rate, loss_scale=None,
                  precision_support=None, synced_batch_norms=0, input_origin=None,
                  pack_line=None):
    """The header of a training run of `plan`. model: the Keras model trained;
    input_source: its Input (named in the Dataset line); learning_rate: the
    recipe's schedule; loss_scale: the LossScale or None; precision_support:
    what native_precision.check found of the devices (None: not checked);
    synced_batch_norms: how many batch-norm layers --sync_batch_norm
    synchronizes; input_origin: where a user's own input comes from;
    pack_line: the Gradient packs line of --gradient_pack_mb=auto
    (engine/run/pack_tuning.py), else the plan's packs are described."""
    static = plan.describe()
    recipe = plan.recipe
    info = [
        ("TensorFlow", tf.__version__),
        ("Model", model.name),
        # A user's own input is named as such, not as the model's default dataset.
        ("Dataset", f"{input_origin or plan.dataset} ({input_source.name})"),
        ("Mode", "training"),
        ("Batch size", static["Batch size"]),
        *([("Global batch", static["Global batch"])] if "Global batch" in static else []),
        ("Num batches", static["Num batches"]),
        *([("Epoch", static["Epoch"])] if "Epoch" in static else []),
        # Logical GPUs splitting one GPU say so (devices.split_gpu).
        ("Devices", static["Devices"] + devices_lib.describe_split(plan.topology)),
        ("Data format", static["Data format"]),
        ("Optimizer", optimizers.describe(recipe.optimizer)),
        ("Learning rate", learning_rate.describe()),
        # The L2 decay the loss adds (0: none), as tf_cnn_benchmarks' --weight_decay.
        ("Weight decay", f"{recipe.loss.weight_decay:g}"),
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
        info.append(("Gradient packs", pack_line or packing.describe(
            model.trainable_variables, plan.exchange.gradient_repacking,
            plan.exchange.gradient_pack_bytes, wire_dtype(plan))))
    if gradients.describe(recipe.clipping):
        info.append(("Gradient clip", gradients.describe(recipe.clipping)))
    if synced_batch_norms:
        info.append(("Batch norm", f"synchronized over the global batch "
                                   f"({synced_batch_norms} layers)"))
    native = precision_support and native_precision.describe(precision_support,
                                                             plan.topology.device)
    info.extend(precision.header_info(recipe.precision, loss_scale, native))
    unseeded = randomness_outside_the_step(model, input_origin)
    if unseeded:
        info.append(("Randomness", f"{unseeded}: exact only on the same topology "
                                   "(docs/checkpoints.md, 'Randomness and exactness')"))
    return info


def wire_dtype(plan):
    """The dtype a half-precision transfer sends, or None: none is set, or
    replicated's one tower, which sums nothing and casts nothing
    (collective_all_reduce casts on any topology)."""
    cast = (plan.exchange.variable_update == "collective_all_reduce"
            or plan.topology.num_towers > 1)
    return plan.exchange.compact_transfer_dtype if cast else None


# Packages whose layers draw only through Keras seed generators, which the step
# sets from (seed, step, tower) (towertrain.engine.step.tower), and whose
# inputs draw from (seed, epoch, example position).
_OWN_PACKAGES = ("keras", "towertrain")


def randomness_outside_the_step(model, input_origin=None):
    """What in this run may draw random numbers the step does not set from
    (seed, step, tower): layers of the user's own classes (they may draw
    without a Keras SeedGenerator), a user's tf.data pipeline or Input. ''
    when there is none: then every topology with the same towers and
    per-tower batch draws the same values."""
    own_classes = sorted({type(layer).__name__ for layer in _layers(model)
                          if type(layer).__module__.split(".")[0] not in _OWN_PACKAGES})
    found = []
    if own_classes:
        found.append(f"your layer class{'es' if len(own_classes) > 1 else ''} "
                     f"{', '.join(own_classes)}")
    # from_arrays is towertrain's own (seeded by epoch and position); any
    # other input a user passes may draw as it likes.
    if input_origin and not input_origin.startswith("from_arrays"):
        found.append(f"your input ({input_origin})")
    return " and ".join(found)


def _layers(model):
    """The model and every layer under it that Keras lists (nested models too)."""
    stack, seen = [model], set()
    while stack:
        layer = stack.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        yield layer
        stack.extend(getattr(layer, "layers", None) or [])
