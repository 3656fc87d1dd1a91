"""The train_dir's run record (towertrain_run.json): what a run was trained as.

Training writes it (the run's resume, towertrain.state.resume, via write),
and a resume holds the run to it (towertrain.state.resume.contract).
--eval reads it so that `--eval --train_dir=D` needs no --model, and a flag
that contradicts it fails before any model is built, with both values named,
instead of later as a list of mismatched checkpoint variables (or, worse, a
run that loads). These functions take values; the flags' side (Params) is
towertrain.commands.recorded_flags.

data_format is recorded but neither filled nor checked: checkpoints do not
depend on the layout, so the device's default (NHWC on cpu, NCHW on gpu) is
the right one for evaluation wherever the run was trained.
"""
import dataclasses
import json
import os

from towertrain.config import settings
from towertrain.errors import CheckpointError

RUN_INFO_FILE = "towertrain_run.json"

# Flags whose value must be the one the run was trained with.
RECORDED_FLAGS = ("model", "data_name")
# True when "model" names a Keras model passed to Trainer(model=...), not the registry's.
USER_MODEL = "user_model"

# Settings that shape the saved state (which optimizer slots exist and what
# they mean, the variables' precision and loss scale, the decay folded into
# every update, the precision the gradients are summed in): a resume that changes one is refused before any step, since
# the checkpoint would load "fine" and train on as another run (a momentum
# run resumed with adam: loss 2.2 -> 911,486). Declared beside their reader
# with `recorded=` (towertrain.config.declare); in the order they are checked
# (towertrain.state.resume.contract), a setting before the options it governs.
STATE_SETTINGS = tuple(s.name for s in settings.recorded())

# Settings that shape the updates but not the saved state's meaning (the
# augmentation, clipping, seed, ...): kept, and a change at a resume is said in
# the header as CHANGED (towertrain.state.resume.contract.compared_changes).
# Declared beside their reader with `recorded=COMPARED`.
COMPARED_SETTINGS = tuple(s.name for s in settings.compared())

# What may change at a resume by design: reported in the header, not refused.
# Listed here, not declared: they are the plan's values (the accumulation
# plan's steps, the run's last step), not settings.
CHANGEABLE = ("accumulation_steps", "total_steps")

# --gradient_pack_mb=auto's pick ({"pack_mb": MB, 0: one pack per dtype; the
# candidates and their times}): written once timed, kept by a resume, which
# trains on it without timing again.
PACK_PICK = "gradient_pack_pick"


def read(train_dir):
    """The record in train_dir as a dict; {} when there is none."""
    if not train_dir:
        return {}
    path = os.path.join(train_dir, RUN_INFO_FILE)
    try:
        with open(path) as f:
            record = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:  # ValueError: not JSON
        raise CheckpointError(f"{path}: unreadable run record ({err}); delete it or "
                              "use another --train_dir") from err
    if not isinstance(record, dict):
        raise CheckpointError(f"{path}: not a run record (a JSON object); delete it or "
                              "use another --train_dir")
    return record


def mark_final(train_dir, step, path):
    """Records checkpoint `path` (of global step `step`) as the run's final one:
    `--eval --eval_interval_secs` following train_dir stops once it evaluated
    it. Written after the checkpoint, so a reader that sees the mark sees the
    checkpoint; a resumed run rewrites the record without it at its start."""
    record = read(train_dir)
    record.update(final_step=int(step), final_checkpoint=os.path.basename(path))
    write(train_dir, record)


def write(train_dir, record):
    """Writes `record` as train_dir's run record, whole or not at all."""
    path = os.path.join(train_dir, RUN_INFO_FILE)
    tmp = path + ".tmp"
    try:
        with open(tmp, "w") as f:
            json.dump(record, f, indent=1, sort_keys=True)
        os.replace(tmp, path)  # atomic: a crash never leaves half a file
    except OSError as err:  # a full disk: the old record stays whole
        if os.path.exists(tmp):
            os.remove(tmp)
        raise CheckpointError(f"--train_dir={train_dir}: cannot write the run record "
                              f"{RUN_INFO_FILE} ({err.strerror or err}); free space or use "
                              "another --train_dir") from err


def pack_pick(record):
    """{PACK_PICK: entry} of the record's --gradient_pack_mb=auto pick, or {}."""
    entry = record.get(PACK_PICK)
    return {PACK_PICK: entry} if isinstance(entry, dict) and "pack_mb" in entry else {}


def record_pack_pick(train_dir, entry):
    """Adds --gradient_pack_mb=auto's pick (engine/run/pack_tuning.py) to the record."""
    record = read(train_dir)
    record[PACK_PICK] = entry
    write(train_dir, record)


def final_step(record):
    """The global step of the run's final checkpoint, or None while it runs."""
    return record.get("final_step")


def record_of(model, data_name, data_format, keras_model, state_settings=None,
              changeable=None, data_dir=None, user_model=False, input_record=None,
              learning_rate=None, topology=None, compared=None, pack_pick=None):
    """The record of a training run: what export and eval need to rebuild the
    model without the training flags (the plan's model, dataset and data
    format, and the built model's classes and image shape), the settings that
    shape its saved state (state_settings) and those a resume may change
    (changeable: accumulation_steps, total_steps). user_model: the model was
    passed to Trainer(model=...): the record names the Keras model instead of
    the registry's, marked as the user's (no command line can rebuild it).
    input_record: training_input's record of the training files.
    learning_rate: which rate the run trains with
    (towertrain.plan.learning_rate.source.record_entry); a record without one
    is older than models' recipes. topology: topology_history's entries.
    pack_pick: {PACK_PICK: entry} of a resumed --gradient_pack_mb=auto run."""
    return {
        "model": keras_model.name if user_model else model,
        USER_MODEL: bool(user_model),
        "data_name": data_name,
        "num_classes": int(keras_model.output_shape[-1]),
        "data_format": data_format,
        "input_shape": [int(d) for d in keras_model.input_shape[1:]],
        # Where the training data came from (None: synthetic), as an absolute path.
        "data_dir": os.path.abspath(data_dir) if data_dir else None,
        **(state_settings or {}),
        **(changeable or {}),
        **(compared or {}),
        **(input_record or {}),
        **({"learning_rate": learning_rate} if learning_rate is not None else {}),
        **(topology or {}),
        **(pack_pick or {}),
    }


def topology_entry(batches, workers, devices_per_worker):
    """How the run's global batch is cut over its topology (towertrain.plan:
    Batches), as the record keeps it."""
    return {"global_batch_size": int(batches.per_update), "per_device": int(batches.per_device),
            "accumulation_steps": int(batches.accumulation_steps), "workers": int(workers),
            "devices_per_worker": int(devices_per_worker),
            "set_by": ("--global_batch_size" if batches.global_batch_size is not None
                       else "--batch_size")}


def topology_history(record, topology, resumed_step):
    """{"topology": this run's, "topology_changes": [...]}: the record's
    changes carried over, plus one {"step", "from", "to"} when this run
    resumes at `resumed_step` on another topology than the record's (None:
    a fresh start, which begins the history anew)."""
    changes = list(record.get("topology_changes", [])) if resumed_step is not None else []
    before = record.get("topology") if resumed_step is not None else None
    keys = ("per_device", "accumulation_steps", "workers", "devices_per_worker")
    if before and any(before.get(k) != topology[k] for k in keys):
        changes.append({"step": int(resumed_step), "from": before, "to": topology})
    return {"topology": topology, "topology_changes": changes}


def state_settings(*sections):
    """{setting: value} of STATE_SETTINGS for a run's plan sections that
    declare them (the recipe's Optimizer, Precision, Loss, Clipping, and the
    Exchange: plan_state_settings): only the
    options of the optimizer used, and the loss scale's only with --use_fp16,
    so an option that does not apply never blocks a resume."""
    values = {f.name: getattr(section, f.name)
              for section in sections for f in dataclasses.fields(section)}

    def value_of(name):
        if name not in values:
            raise ValueError(f"setting {name} is recorded but none of the sections "
                             f"{[type(s).__name__ for s in sections]} declares it")
        return values[name]
    return settings.recorded_values(value_of)


def plan_state_settings(plan):
    """state_settings of a run's plan (towertrain.plan): the sections that
    declare them, the recipe's and the exchange's (the wire's precision)."""
    recipe = plan.recipe
    return state_settings(recipe.optimizer, recipe.precision, recipe.loss, recipe.clipping,
                          plan.exchange)


def compared_values(sections, seed):
    """{setting: value} of COMPARED_SETTINGS from a run's plan sections that
    declare them (input, exchange, clipping) and its seed (--tf_random_seed)."""
    values = {"tf_random_seed": seed}
    for section in sections:
        values.update({f.name: getattr(section, f.name) for f in dataclasses.fields(section)})
    missing = [name for name in COMPARED_SETTINGS if name not in values]
    if missing:
        raise ValueError(f"settings {missing} are compared at a resume but none of the "
                         f"sections {[type(s).__name__ for s in sections]} holds them")
    return {name: values[name] for name in COMPARED_SETTINGS}


def training_input(data_name, data_dir, num_examples):
    """The record of a run's training files (empty for synthetic data): its
    examples per epoch and file names. A resume needs the same input, since
    the checkpoint holds the position in it (a resume on fewer files failed
    at the first step with TensorFlow's 'Expected 1 components but got 0')."""
    if not data_dir:
        return {}
    # As the reader picks them; deferred: the command line reads the record before
    # TensorFlow, and these readers import it.
    from towertrain.input_pipeline import cifar10, imagenet
    reader = cifar10 if data_name == "cifar10" else imagenet
    return {"input_examples": int(num_examples) if num_examples is not None else None,
            "input_files": [os.path.basename(f) for f in reader.find_files(data_dir)]}


def check_eval_input(record, data_dir, where):
    """Refuses to score a run trained on files on synthetic data (no --data_dir):
    its accuracy would be noise, reported as the run's."""
    trained_on = record.get("data_dir")
    if trained_on and not data_dir:
        raise CheckpointError(
            f"--eval: {where} was trained on files (--data_dir={trained_on}) but no "
            "--data_dir is given, so it would be scored on synthetic data; pass "
            f"--data_dir={trained_on} (or the directory of its eval split)")


def directory(checkpoint, train_dir):
    """Where the record of the checkpoint a run evaluates or resumes lives:
    next to `checkpoint` (--checkpoint) when given, else `train_dir`."""
    if checkpoint:  # a bare name, --checkpoint=ckpt-4: the current folder's
        return checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint) or "."
    return train_dir


def recorded_values(given, explicit, record):
    """{flag: recorded value} for each recorded flag not given explicitly
    (`explicit`: names given on the command line) whose value in `given`
    ({flag: value}) differs from the record's."""
    return {name: record[name] for name in RECORDED_FLAGS
            if name not in explicit and record.get(name) is not None
            and given.get(name) != record[name]}


def _model_text(name, user_model):
    if user_model:
        return f"your own Keras model {name!r} (Trainer(model=...))"
    return f"--model={name}"


def check_rebuildable(record, where, doing):
    """Refuses a command line (--eval, export) on a run trained on the user's
    own model: it cannot be built from the registry, and the registry's model
    of the record's name would fail on missing variables. doing: what is
    refused, 'evaluate' or 'export'."""
    if not record.get(USER_MODEL):
        return
    raise CheckpointError(
        f"{where} was trained on {_model_text(record.get('model'), True)}, which the command "
        f"line cannot build; {doing} it in the library: Trainer(params, model=<that model>), "
        f"then trainer.restore(<its checkpoint>) and trainer.{doing}(...)")


def check(record, given, where, evaluating=False):
    """Raises CheckpointError when the run's values disagree with the record.

    given: {flag: value} for RECORDED_FLAGS, as the run resolved them (the
    model's default dataset when --data_name is not given), and USER_MODEL
    True when "model" is the Keras name of a model passed to Trainer; where: how the
    message names the record's directory, e.g. '--train_dir=D'; evaluating:
    an --eval run (the advice differs from a resume's).
    """
    if given.get(USER_MODEL):
        # A user's model is known by its Keras name alone (Keras numbers
        # unnamed models per process: 'sequential_1'), so the restore, which
        # checks every variable, judges it rather than the name.
        given = {name: value for name, value in given.items() if name != "model"}
    elif record.get(USER_MODEL):
        raise CheckpointError(
            f"--model={given.get('model')} but {where} was trained on "
            f"{_model_text(record.get('model'), True)}, which the command line cannot build; "
            "resume it in the library with Trainer(params, model=<that model>), or use "
            "another --train_dir")
    for name in RECORDED_FLAGS:
        recorded = record.get(name)
        value = given.get(name)
        if recorded is None or name not in given or value == recorded:
            continue
        advice = (f"drop --{name} or use another --train_dir" if evaluating else
                  f"pass --{name}={recorded} to resume that run, or use another --train_dir")
        raise CheckpointError(f"--{name}={value} but {where} was trained with "
                              f"--{name}={recorded}; {advice}")
