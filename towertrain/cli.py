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
    except (trainer_lib.TrainingDivergedError, ckpt_lib.CheckpointError) as err:
        return _error(str(err))
    return 0


def run():
    # Before TensorFlow loads: its C++ banners (printed before absl logging is
    # set up, so level 2 does not hide them) would bury the benchmark output.
    # Python-level errors are unaffected; export the variable to see C++ logs.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from absl import app
    from towertrain import flags as flags_lib
    flags_lib.define_flags()
    app.run(lambda argv: sys.exit(main(argv)))


if __name__ == "__main__":
    run()
