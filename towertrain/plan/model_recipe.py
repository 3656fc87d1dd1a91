"""Which learning rate a run trains with, and a model's own recipe in steps.

Chosen as tf_cnn_benchmarks' benchmark_cnn.get_learning_rate chooses:

1. --piecewise_learning_rate_schedule (it excludes --init_learning_rate and
   the decay flags; towertrain.recipe.settings refuses them);
2. --init_learning_rate: constant, or with --num_epochs_per_decay and
   --learning_rate_decay_factor a staircase decay floored at
   --minimum_learning_rate (or towertrain's --learning_rate_schedule=cosine);
3. otherwise the model's own recipe (towertrain.models.recipes, the catalog's
   `learning_rate_recipe`). --num_learning_rate_warmup_epochs applies to 1
   and 2 only, as there; given with a model whose recipe varies it is refused
   (tf_cnn_benchmarks ignores it), as are the other schedule flags.

A model without a recipe trains with its default_learning_rate, and the
schedule flags other than 1 and 2 (warmup, decay, cosine, linear scaling)
still apply to that rate (towertrain's own, where tf_cnn_benchmarks ignores or
refuses them). A run whose record (towertrain_run.json) was written before
recipes existed has no learning-rate entry: it keeps that constant rate at a
resume, and the header says so.

The recipe's step is tf_cnn_benchmarks' effective step. There, each tower's
gradient is the mean over its own batch; --variable_update=replicated and
collective_all_reduce sum the N towers' gradients (N = every device of every
worker), parameter_server averages them. towertrain always applies the mean
over the global batch (docs/migration.md), so the recipe's rate is
multiplied by N where tf_cnn_benchmarks sums: the update is the same.
"""
import json
import os

from towertrain.errors import ParamsError
from towertrain.models import recipes as recipes_lib
from towertrain.plan import schedule as schedule_lib
from towertrain.plan import steps as steps_lib

# The run record's file (towertrain.state.run_record.RUN_INFO_FILE; read here
# as plain JSON, the plan imports no TensorFlow) and its learning-rate entry.
RUN_RECORD_FILE = "towertrain_run.json"
RECORD_ENTRY = "learning_rate"

# The modes whose tf_cnn_benchmarks counterpart sums the towers' gradients.
SUMMING_MODES = ("replicated", "collective_all_reduce")
# The schedule flags that only reshape --init_learning_rate or a constant model rate.
_RESHAPING_FLAGS = ("num_learning_rate_warmup_epochs", "num_epochs_per_decay",
                    "learning_rate_decay_factor", "learning_rate_schedule",
                    "scale_learning_rate", "minimum_learning_rate")


def source_of(params, recipe, kept=False):
    """'flags' (1 and 2 above), 'recipe' (the model's, varying), 'model' (its
    constant rate) or 'kept' (a resumed run recorded before recipes)."""
    if params.piecewise_learning_rate_schedule is not None or (
            params.init_learning_rate is not None):
        return "flags"
    if recipe is None or not recipe.varies:
        return "model"
    return "kept" if kept else "recipe"


def check_flags(params, model, recipe):
    """Refuses a schedule flag that the model's varying recipe would ignore."""
    for flag in _RESHAPING_FLAGS:
        value = getattr(params, flag)
        if value:
            raise ParamsError(
                f"--{flag}={value}: only applies with --init_learning_rate or "
                f"--piecewise_learning_rate_schedule; without them {model} trains with its "
                f"own learning-rate recipe ({recipe.origin or 'registered with it'}), as "
                "tf_cnn_benchmarks; give --init_learning_rate to set the rate yourself")


def tfcnn_sum(variable_update, towers_per_worker, num_workers):
    """How many towers' gradients tf_cnn_benchmarks adds in this mode (1: it averages)."""
    return towers_per_worker * num_workers if variable_update in SUMMING_MODES else 1


def learning_rate(recipe, model, global_batch, examples, epoch_source, variable_update,
                  towers_per_worker, num_workers, per_device=None):
    """The LearningRate of `model`'s recipe for a global batch of `global_batch`
    examples (per device x devices x workers: what tf_cnn_benchmarks passes its
    get_learning_rate) and an epoch of `examples`; epoch_source: where that
    number comes from (the header says); per_device: --batch_size, for messages."""
    r = recipe
    scale, parts = 1.0, []
    if r.divide_in_replicated and variable_update == "replicated":
        scale /= towers_per_worker
        parts.append(f" / {towers_per_worker} devices (replicated)")
    if r.per_examples is not None:
        scale *= global_batch / r.per_examples
        parts.append(f" x {global_batch}/{r.per_examples}")
    summed = tfcnn_sum(variable_update, towers_per_worker, num_workers)
    if summed > 1:
        scale *= summed
        parts.append(f" x {summed} (tf_cnn_benchmarks' {variable_update} sums the "
                     f"{summed} devices' gradients; towertrain averages them)")

    def steps(epochs):
        return recipes_lib.epochs_to_steps(r.epoch_steps, epochs, examples, global_batch)

    # tf.train.piecewise_constant keeps the earlier value on the boundary's own
    # step: the later one starts a step after it.
    boundaries = tuple(steps(e) + 1 for e in r.boundary_epochs)
    decay_steps = steps(r.decay_epochs) if r.decay_epochs is not None else None
    if decay_steps is not None and decay_steps < 1:
        raise ParamsError(f"--batch_size={per_device}: a global batch of {global_batch} is "
                          f"more than {model}'s decay interval of {r.decay_epochs:g} epochs of "
                          f"{examples} examples; use a smaller batch or --init_learning_rate")
    epoch_text = (f"epoch = {examples:,} examples / {global_batch} "
                  f"({epoch_source})")
    return schedule_lib.LearningRate(
        kind=r.kind, base_values=tuple(float(v) for v in r.values), scale=scale,
        boundaries=boundaries, boundary_epochs=tuple(r.boundary_epochs),
        decay_steps=decay_steps, decay_factor=r.decay_factor, decay_epochs=r.decay_epochs,
        warmup_steps=steps(r.warmup_epochs) if r.warmup_epochs else 0,
        warmup_epochs=r.warmup_epochs or None, global_batch=global_batch,
        warmup_from_zero=True, scale_text="".join(parts) or None, epoch_text=epoch_text,
        origin=f"{model}'s recipe" + (f", as {r.origin}" if r.origin else ""),
        source="recipe")


def epoch_of(params, input_facts, steps, dataset, global_batch):
    """(examples per epoch, where they come from) for an epoch-based schedule:
    the run's epoch, else on synthetic data (or an input that does not say)
    the dataset's known size, as tf_cnn_benchmarks and --num_epochs take it."""
    if steps.epoch_examples:
        return steps.epoch_examples, steps.epoch_source
    if steps.batches_per_epoch:  # an input that counts batches, not examples
        return steps.batches_per_epoch * global_batch, "the input's steps per epoch"
    if dataset in steps_lib.KNOWN_EXAMPLES_PER_EPOCH and params.num_examples_per_epoch is None:
        why = "the data is synthetic" if input_facts.synthetic else "the input does not say"
        return steps_lib.KNOWN_EXAMPLES_PER_EPOCH[dataset], (
            f"{dataset}'s known training size, as tf_cnn_benchmarks; {why}")
    return None, None


def origin_of(params, model, source, train_dir=None):
    """Where a rate that is not a model's recipe comes from, for the header."""
    if source == "flags":
        return ("--piecewise_learning_rate_schedule"
                if params.piecewise_learning_rate_schedule is not None
                else "--init_learning_rate")
    if source == "kept":
        return (f"kept at resume: the run in --train_dir={train_dir} was recorded before "
                f"models had learning-rate recipes and trained with {model}'s constant rate; "
                f"a new run trains with {model}'s recipe")
    return f"{model}'s rate"


def recorded_before_recipes(train_dir):
    """Whether train_dir holds the record of a run started before learning-rate
    recipes (no learning-rate entry, or one that kept the constant): its resume
    keeps the constant rate it trained with. An unreadable record is left to
    the resume's own check (towertrain.state.run_record.read)."""
    if not train_dir:
        return False
    try:
        with open(os.path.join(train_dir, RUN_RECORD_FILE)) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return False
    if not isinstance(record, dict):
        return False
    entry = record.get(RECORD_ENTRY)
    return entry is None or (isinstance(entry, dict) and entry.get("source") == "kept")


def record_entry(schedule):
    """The run record's learning-rate entry for a run's schedule: which rate it
    trained with and the header's words for it."""
    return {"source": schedule.source, "describe": schedule.describe()}
