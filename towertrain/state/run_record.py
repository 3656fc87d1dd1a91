"""The train_dir's run record (towertrain_run.json): what a run was trained as.

Training writes it (run_loop, via checkpoint.write_run_info). --eval reads it so
that `--eval --train_dir=D` needs no --model, and a flag that contradicts it
fails before any model is built, with both values named, instead of later as a
list of mismatched checkpoint variables (or, worse, a run that loads).

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


def directory(params):
    """Where the record of the checkpoint `params` evaluates or resumes lives:
    next to --checkpoint when given, else --train_dir."""
    if params.checkpoint:
        path = params.checkpoint
        return path if os.path.isdir(path) else os.path.dirname(path)
    return params.train_dir


def fill_params(params, explicit, record):
    """params with each recorded flag not given explicitly (`explicit`: names
    given on the command line) taken from the record."""
    changes = {name: record[name] for name in RECORDED_FLAGS
               if name not in explicit and record.get(name) is not None
               and getattr(params, name) != record[name]}
    if not changes:
        return params
    from towertrain.errors import ParamsError
    try:
        return params.replace(**changes)
    except ParamsError as err:  # e.g. a model registered only in the training process
        raise ParamsError(f"{err} (from the run record {RUN_INFO_FILE}; this process "
                          "does not know that value)") from err


def check(record, params, where):
    """Raises CheckpointError when params disagree with the record.

    where: how the message names the record's directory, e.g. '--train_dir=D'.
    """
    for name in RECORDED_FLAGS:
        recorded = record.get(name)
        given = _resolved(params, name)
        if recorded is None or given == recorded:
            continue
        advice = (f"drop --{name} or use another --train_dir" if params.eval else
                  f"pass --{name}={recorded} to resume that run, or use another --train_dir")
        raise CheckpointError(f"--{name}={given} but {where} was trained with "
                              f"--{name}={recorded}; {advice}")


def _resolved(params, name):
    if name == "data_name" and params.data_name is None:
        from towertrain import models  # deferred: builds the registry (imports Keras)
        return models.get_spec(params.model).default_dataset
    return getattr(params, name)
