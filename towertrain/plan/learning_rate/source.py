"""Which learning rate a run trains with: the flags, the model's own recipe,
its constant rate, or the constant a resumed run kept.

Chosen as tf_cnn_benchmarks' benchmark_cnn.get_learning_rate chooses:

1. --piecewise_learning_rate_schedule (it excludes --init_learning_rate and
   the decay flags; towertrain.plan.learning_rate.settings refuses them);
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
"""
import json
import os

from towertrain.errors import ParamsError

# The run record's file (towertrain.state.run_record.RUN_INFO_FILE; read here
# as plain JSON, the plan imports no TensorFlow) and its learning-rate entry.
RUN_RECORD_FILE = "towertrain_run.json"
RECORD_ENTRY = "learning_rate"

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


def origin_of(params, model, source, train_dir=None, user_model=False):
    """Where a rate that is not a model's recipe comes from, for the header.
    user_model: a Keras model passed to the Trainer, which `model` (the
    registry's default) only lends its default rate."""
    if source == "flags":
        return ("--piecewise_learning_rate_schedule"
                if params.piecewise_learning_rate_schedule is not None
                else "--init_learning_rate")
    if source == "kept":
        return (f"kept at resume: the run in --train_dir={train_dir} was recorded before "
                f"models had learning-rate recipes and trained with {model}'s constant rate; "
                f"a new run trains with {model}'s recipe")
    if user_model:
        return ("the default for a model passed in, as no init_learning_rate is given; "
                "Params(init_learning_rate=) sets it")
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
    return {"source": schedule.source, "describe": schedule.describe(),
            # The rates the run trains at, scaled: a resume compares them
            # (towertrain.state.resume.contract.learning_rate_change).
            "values": [float(v) for v in schedule.values]}
