"""`python -m towertrain` / `towertrain`: parse flags, check them, train.

Every failure before training is one line `towertrain: error: --flag=value: ...`
and exit status 2; --help lists towertrain's flags and exits 0. TensorFlow's
own logging stays off the output unless --verbose asks for it.
"""
import os
import re
import sys


def _error(message):
    print(f"towertrain: error: {message}", file=sys.stderr)
    return 2


def main(argv):
    if len(argv) > 1:
        return _error(f"unexpected arguments {argv[1:]}; flags take the form --name=value")
    import_tensorflow_quietly()
    from towertrain import devices, flags as flags_lib, params as params_lib
    from towertrain import trainer as trainer_lib
    from towertrain import checkpoint as ckpt_lib, evaluation, run_record
    from towertrain import cluster as cluster_lib
    cluster, cluster_errors = cluster_lib.SINGLE, _cluster_errors()
    try:
        params = flags_lib.params_from_flags()
        # Multi-worker: join the cluster before TensorFlow runs any op.
        cluster = cluster_lib.setup(cluster_lib.from_params(params), params)
        if params.eval:
            # --model/--data_name default to the run's own; given ones must agree.
            where = run_record.directory(params)
            record = run_record.read(where)
            params = run_record.fill_params(params, flags_lib.explicit_flags(), record)
            run_record.check(record, params, where if params.checkpoint
                             else f"--train_dir={where}")
        if params.train_dir and not params.eval:
            ckpt_lib.ensure_writable(params.train_dir)  # fail before building anything
        trainer = trainer_lib.Trainer(params)
    except (params_lib.ParamsError, devices.DeviceError, ckpt_lib.CheckpointError) as err:
        return _error(str(err))
    except cluster_errors as err:
        _cluster_failure(cluster, err)
    try:
        if params.eval:
            evaluation.run_eval(trainer)
        else:
            trainer.train()
    except (trainer_lib.TrainingDivergedError, ckpt_lib.CheckpointError,
            params_lib.ParamsError) as err:  # ParamsError covers InputError (bad data)
        return _error(str(err))
    except cluster_errors as err:
        _cluster_failure(cluster, err)
    finally:
        trainer.close()  # clears staging areas, whichever way the run ended
    return 0


def _cluster_failure(cluster, err):
    """A dead or unreachable worker: say which, and exit 1 without waiting on
    TensorFlow's teardown (its gRPC server can block on the dead peer)."""
    from towertrain import cluster as cluster_lib
    if cluster.num_workers == 1:
        raise err
    _error(cluster_lib.failure_message(cluster, err))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


def _cluster_errors():
    import tensorflow as tf
    return (tf.errors.DeadlineExceededError, tf.errors.UnavailableError,
            tf.errors.CancelledError, tf.errors.AbortedError, tf.errors.InternalError)


def import_tensorflow_quietly():
    """Imports TensorFlow with stderr muted when TF_CPP_MIN_LOG_LEVEL >= 2.

    TF 2.21 prints its oneDNN banner from C++ before absl logging is set up, so
    TF_CPP_MIN_LOG_LEVEL does not hide it; it would bury the one-line errors
    and the benchmark output. --verbose or TF_CPP_MIN_LOG_LEVEL=0 shows it.
    """
    if "tensorflow" in sys.modules or int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0") or 0) < 2:
        import tensorflow  # noqa: F401
        return
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        import tensorflow  # noqa: F401
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


HELP_ARGS = ("-h", "-help", "--help", "-?", "-helpshort", "--helpshort")
FULL_HELP_ARGS = ("-helpfull", "--helpfull")


def parse_flags(argv):
    """absl's flags_parser hook: --help, one-line flag errors (exit 2), logging.

    absl's own parser prints a FATAL line and exits 1, and its --help lists
    only the main module's flags (none: they live in towertrain.flags).
    """
    from absl import flags
    from towertrain import flags as flags_lib
    args = argv[1:argv.index("--")] if "--" in argv else argv[1:]
    if any(arg in HELP_ARGS for arg in args):
        sys.stdout.write(flags_lib.help_text())
        sys.exit(0)
    if any(arg in FULL_HELP_ARGS for arg in args):
        sys.stdout.write(flags_lib.help_text() + "\nAll flags:\n\n" +
                         flags.FLAGS.get_help() + "\n")
        sys.exit(0)
    try:
        rest = flags.FLAGS(argv)
    except (flags.Error, ValueError) as err:  # ValueError: '--noeval=1'
        sys.exit(_error(_flag_error_message(err)))
    _configure_logging(flags.FLAGS)
    return rest


def _flag_error_message(err):
    """absl's parse errors, rewritten to start with the flag like Params' own."""
    from absl import flags
    text = str(err).strip().splitlines()[0]
    if isinstance(err, flags.UnrecognizedFlagError):
        suggestion = re.search(r"Did you mean: (.+?) ?\?", text)
        hint = f"did you mean --{suggestion.group(1)}? " if suggestion else ""
        return f"--{err.flagname}: unknown flag; {hint}see --help for the flags"
    bad_value = re.match(r"flag --(\w+)=(.*?): ", text)
    if bad_value and bad_value.group(1) in flags.FLAGS:
        flag = flags.FLAGS[bad_value.group(1)]
        choices = getattr(flag.parser, "enum_values", None)
        reason = {"int": "must be an integer", "float": "must be a number",
                  "bool": f"is on/off: use --{flag.name} or --no{flag.name}"}.get(
                      flag.flag_type(), text[bad_value.end():])
        if choices:
            reason = f"must be one of {', '.join(choices)}"
        return f"--{flag.name}={bad_value.group(2)}: {reason}"
    missing = re.match(r"Missing value for flag (--\w+)", text)
    if missing:
        return f"{missing.group(1)}: needs a value ({missing.group(1)}=VALUE)"
    no_value = re.match(r"(--\S+) does not take an argument", text)
    if no_value:
        return f"{no_value.group(1)}: takes no value (an on/off flag)"
    return text


def _configure_logging(flag_values):
    """Hides TensorFlow's C++ and absl INFO logging unless --verbose.

    Runs before TensorFlow is imported (TF_CPP_MIN_LOG_LEVEL is read then) and
    before absl.app raises its default --verbosity to INFO, which prints a
    'Sharding callback duration' line for every checkpoint save.
    """
    if flag_values.verbose:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
    else:
        # 3, not 2: TensorFlow logs harmless fallbacks at ERROR level (e.g.
        # "oneDNN supports DT_UINT8 only on platforms with AVX-512"); real
        # failures reach towertrain as exceptions and are reported as such.
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if "verbosity" in flag_values and flag_values["verbosity"].using_default_value:
        flag_values.verbosity = 0 if flag_values.verbose else -1  # INFO / WARNING


def run():
    from absl import app
    from towertrain import flags as flags_lib
    flags_lib.define_flags()
    app.run(main, flags_parser=parse_flags)


if __name__ == "__main__":
    run()
