"""The train_dir's run record (towertrain_run.json): what a run was trained as.

Training writes it (towertrain.callbacks.default_callbacks, via
checkpoint.write_run_info). --eval reads it so that `--eval --train_dir=D`
needs no --model, and a flag that contradicts it fails before any model is
built, with both values named, instead of later as a list of mismatched
checkpoint variables (or, worse, a run that loads). These functions take
values; the flags' side (Params) is towertrain.commands.recorded_flags.

data_format is recorded but neither filled nor checked: checkpoints do not
depend on the layout, so the device's default (NHWC on cpu, NCHW on gpu) is
the right one for evaluation wherever the run was trained.
"""
import json
import os

from towertrain.state.checkpoint import RUN_INFO_FILE, CheckpointError

# Flags whose value must be the one the run was trained with.
RECORDED_FLAGS = ("model", "data_name")


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
    from towertrain.state.checkpoint import write_run_info
    record = read(train_dir)
    record.update(final_step=int(step), final_checkpoint=os.path.basename(path))
    write_run_info(train_dir, record)


def final_step(record):
    """The global step of the run's final checkpoint, or None while it runs."""
    return record.get("final_step")


def record_of(model, data_name, data_format, keras_model):
    """The record of a training run: what export and eval need to rebuild the
    model without the training flags (the plan's model, dataset and data
    format, and the built model's classes and image shape)."""
    return {
        "model": model,
        "data_name": data_name,
        "num_classes": int(keras_model.output_shape[-1]),
        "data_format": data_format,
        "input_shape": [int(d) for d in keras_model.input_shape[1:]],
    }


def directory(checkpoint, train_dir):
    """Where the record of the checkpoint a run evaluates or resumes lives:
    next to `checkpoint` (--checkpoint) when given, else `train_dir`."""
    if checkpoint:
        return checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint)
    return train_dir


def recorded_values(given, explicit, record):
    """{flag: recorded value} for each recorded flag not given explicitly
    (`explicit`: names given on the command line) whose value in `given`
    ({flag: value}) differs from the record's."""
    return {name: record[name] for name in RECORDED_FLAGS
            if name not in explicit and record.get(name) is not None
            and given.get(name) != record[name]}


def check(record, given, where, evaluating=False):
    """Raises CheckpointError when the run's values disagree with the record.

    given: {flag: value} for RECORDED_FLAGS, as the run resolved them (the
    model's default dataset when --data_name is not given); where: how the
    message names the record's directory, e.g. '--train_dir=D'; evaluating:
    an --eval run (the advice differs from a resume's).
    """
    for name in RECORDED_FLAGS:
        recorded = record.get(name)
        value = given.get(name)
        if recorded is None or value == recorded:
            continue
        advice = (f"drop --{name} or use another --train_dir" if evaluating else
                  f"pass --{name}={recorded} to resume that run, or use another --train_dir")
        raise CheckpointError(f"--{name}={value} but {where} was trained with "
                              f"--{name}={recorded}; {advice}")
