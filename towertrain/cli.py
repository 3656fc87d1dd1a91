"""`python -m towertrain` / `towertrain`: parse flags, check them, train."""
import os
import sys


def _error(message):
    print(f"towertrain: error: {message}", file=sys.stderr)
    return 2


def main(argv):
    if len(argv) > 1:
        return _error(f"unexpected arguments {argv[1:]}; flags take the form --name=value")
    from towertrain import devices, flags as flags_lib, params as params_lib
    from towertrain import trainer as trainer_lib
    from towertrain import checkpoint as ckpt_lib, evaluation
    try:
        params = flags_lib.params_from_flags()
        if params.train_dir and not params.eval:
            ckpt_lib.ensure_writable(params.train_dir)  # fail before building anything
        trainer = trainer_lib.Trainer(params)
    except (params_lib.ParamsError, devices.DeviceError, ckpt_lib.CheckpointError) as err:
        return _error(str(err))
    try:
        if params.eval:
            evaluation.run_eval(trainer)
        else:
            trainer.train()
    except (trainer_lib.TrainingDivergedError, ckpt_lib.CheckpointError,
            params_lib.ParamsError) as err:  # ParamsError covers InputError (bad data)
        return _error(str(err))
    finally:
        trainer.close()  # clears staging areas, whichever way the run ended
    return 0


def _import_tensorflow_quietly():
    """Imports TensorFlow with stderr muted when TF_CPP_MIN_LOG_LEVEL >= 2.

    TF 2.21 prints its oneDNN banner from C++ before absl logging is set up, so
    TF_CPP_MIN_LOG_LEVEL does not hide it; it would bury the one-line errors
    and the benchmark output. Export TF_CPP_MIN_LOG_LEVEL=0 to see it.
    """
    if int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0") or 0) < 2:
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


def run():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    _import_tensorflow_quietly()
    from absl import app
    from towertrain import flags as flags_lib
    flags_lib.define_flags()
    app.run(lambda argv: sys.exit(main(argv)))


if __name__ == "__main__":
    run()
