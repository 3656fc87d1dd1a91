"""The flags' side of the run record (towertrain.state.run_record): --eval
takes the training run's --model and --data_name from it, and a given flag
that contradicts it fails naming both values. The record's functions take
values; this is where Params meets them."""
from towertrain.errors import ParamsError
from towertrain.models import catalog
from towertrain.state import run_record


def directory(params):
    """Where the record of the checkpoint `params` evaluates or resumes lives:
    next to --checkpoint when given, else --train_dir."""
    return run_record.directory(params.checkpoint, params.train_dir)


def fill_params(params, explicit, record):
    """params with each recorded flag not given explicitly (`explicit`: names
    given on the command line) taken from the record."""
    # As given (None: not given), so the record's model brings its own dataset.
    given = {name: getattr(params, name) for name in run_record.RECORDED_FLAGS}
    changes = run_record.recorded_values(given, explicit, record)
    if not changes:
        return params
    try:
        return params.replace(**changes)
    except ParamsError as err:  # e.g. a model registered only in the training process
        raise ParamsError(f"{err} (from the run record {run_record.RUN_INFO_FILE}; this "
                          "process does not know that value)") from err


def check(record, params, where):
    """Raises CheckpointError when params disagree with the record.

    where: how the message names the record's directory, e.g. '--train_dir=D'.
    """
    run_record.check(record, {name: resolved(params, name)
                              for name in run_record.RECORDED_FLAGS},
                     where, evaluating=params.eval)


def resolved(params, name):
    """The flag's value as a run uses it: --model defaults to the registry's
    default, --data_name to the model's dataset."""
    if name == "model":
        return params.resolved_model
    if name == "data_name" and params.data_name is None:
        return catalog.get_spec(params.resolved_model).default_dataset
    return getattr(params, name)
