"""`python -m towertrain` / `towertrain`: parse flags, check them, train.

Every failure before training is one line `towertrain: error: --flag=value: ...`
and exit status 2; --help lists towertrain's flags and exits 0. TensorFlow's
own logging stays off the output unless --verbose asks for it.
"""
import os
import sys
import textwrap
import time

from absl import flags

from towertrain import errors, tf_errors
from towertrain.commands import common, recorded_flags, worker_log
from towertrain.config import flags as flags_lib, settings
from towertrain.engine.distributed import cluster as cluster_lib, peer_loss
from towertrain.engine.process import runtime, settings as process_settings
from towertrain.models import catalog  # names and defaults only: no Keras import
from towertrain.state import run_record, writable

# TensorFlow and the modules that import it are imported inside the functions
# that use them, after the flags are parsed: --help stays instant, and
# TensorFlow reads the environment (logging, --mkl, --xla) the flags set as it
# loads.


def main(argv):
    if len(argv) > 1:
        return common.fail(f"unexpected arguments {argv[1:]}; flags take the form --name=value")
    # --mkl, --xla: OpenMP and XLA read the environment as TensorFlow loads.
    runtime.set_environment(process_settings.environment(**{
        name: flags.FLAGS[name].value for name in process_settings.ENVIRONMENT_SETTINGS}))
    common.import_tensorflow_quietly()
    # After the environment is set: these import TensorFlow.
    from towertrain import trainer as trainer_lib
    from towertrain.commands import evaluate
    cluster, cluster_errors, params = cluster_lib.SINGLE, peer_loss.error_types(), None
    try:
        params = flags_lib.params_from_flags()
        # Before TensorFlow runs any op: threads, XLA, GPU memory (setup calls
        # runtime.configure with the cluster), then multi-worker joins it.
        worker_log.before_join()
        # A multi-worker task's C++ logs go to a file from before its server
        # starts: a port that cannot be served, or later a lost peer's abort.
        cluster = trainer_lib.join_cluster(
            params, before_server=lambda joined: worker_log.divert(joined.task_index))
        if params.eval:
            # --model/--data_name default to the run's own; given ones must agree.
            where = recorded_flags.directory(params)
            if params.eval_interval_secs:  # an evaluator started beside its training run
                from towertrain.state import eval_follower
                eval_follower.wait_for_record(where, params.eval_interval_secs)
            record = run_record.read(where)
            named = where if params.checkpoint else f"--train_dir={where}"
            run_record.check_rebuildable(record, f"--eval: {named}", "evaluate")
            params = recorded_flags.fill_params(params, flags_lib.explicit_flags(), record)
            recorded_flags.check(record, params, named)
            run_record.check_eval_input(record, params.data_dir, named)
        # Every path the run writes, probed without creating any: a run refused
        # later in setup (precision, devices, data) leaves nothing behind.
        writable.check_run(common.outputs_of(params), training=not params.eval)
        forward_only = flags_lib.FLAGS.forward_only
        if forward_only:  # inference reads batches as they come: no staging
            params = params.replace(staging_depth=0)
        trainer = trainer_lib.Trainer(params)
    except (errors.ParamsError, errors.DeviceError, errors.CheckpointError,
            errors.OutOfMemoryError) as err:  # OutOfMemoryError: the input's build
        return common.fail(str(err))
    except cluster_errors as err:
        _cluster_failure(cluster, err, getattr(params, "train_dir", None))
    try:
        if params.eval:
            evaluate.run_eval(trainer)
        elif forward_only:
            from towertrain.engine.evaluation import inference
            inference.run(trainer.plan, trainer.model, trainer.devices, trainer.variables,
                          trainer.feed, trainer.loss_fn)
        else:
            trainer.train()
    except (errors.TrainingDivergedError, errors.CheckpointError, errors.OutOfMemoryError,
            errors.ParamsError) as err:  # ParamsError covers InputError (bad data)
        return common.fail(str(err))
    except cluster_errors as err:
        _cluster_failure(cluster, err, params.train_dir, trainer)
    except _op_error() as err:  # a kernel's error in a step: an op of the model, a shape
        return common.fail(step_failure(err, params))
    finally:
        trainer.close()  # clears staging areas, whichever way the run ended
    worker_log.discard()
    return 0


def _cluster_failure(cluster, err, train_dir, trainer=None):
    """A dead or unreachable worker: one line (which peer, at which step, what
    happens next), and exit with peer_loss.EXIT_STATUS without waiting on
    TensorFlow's teardown (its gRPC server can block on the dead peer)."""
    if cluster.num_workers == 1:
        raise err
    step = None
    if trainer is not None:
        try:
            step = trainer.global_step()  # a local variable: readable after the abort
        except Exception:  # noqa: BLE001 - the line goes out without the step
            step = None
    sys.stderr.flush()  # TensorFlow's abort lines are in the log by now, if any
    after = peer_loss.next_words(err, cluster.task_index == 0, train_dir, worker_log.kept())
    common.fail(cluster_lib.failure_message(cluster, err, step, after))
    sys.stdout.flush()
    sys.stderr.flush()
    # The other survivors' health checks still see this one for a moment, so
    # their lines name only the peer that was lost.
    time.sleep(peer_loss.LINGER_SECS)
    os._exit(peer_loss.EXIT_STATUS)


def _op_error():
    import tensorflow as tf
    return tf.errors.OpError


def step_failure(err, params):
    """One line for TensorFlow's error in a step: the model, the op (its node
    names the tower and layer), what the kernel said, and what is kept."""
    node = tf_errors.FAILED_NODE.search(err.message)
    at = f" at node {node.group(1)}" if node else ""
    kept = (f"--train_dir={params.train_dir} keeps its last checkpoint" if params.train_dir
            else "no --train_dir: nothing was saved")
    return (f"--model={params.model}: a training step failed in TensorFlow{at}: "
            f"{tf_errors.error_text(err)} ({type(err).__name__}); {kept}")


# The README's first command: what a newcomer runs first.
EXAMPLE = ("python -m towertrain --model=resnet20 --device=cpu --num_gpus=2 "
           "--variable_update=replicated --num_batches=20")


def help_text(width=80):
    """--help: towertrain's own flags, grouped, each with its default."""
    lines = ["usage: python -m towertrain [--flag=value ...]", "",
             "Example: ResNet-20 on synthetic CIFAR-10 data over 2 logical CPU devices:",
             "  " + EXAMPLE, "",
             "Models (--model=NAME; towertrain.register_model adds your own):"]
    lines += textwrap.wrap(", ".join(catalog.registered_names()), width,
                           initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False)
    lines += ["", "towertrain's flags (--helpfull also lists absl's logging and debugging "
              "flags):"]
    for title, names in flags_lib.GROUPS:
        lines += ["", f"{title}:"]
        for name in names:
            lines += common.flag_help(flags.FLAGS[name], width,
                                      settings.shown_default(name))
    return "\n".join(lines) + "\n"


# absl's own parser prints a FATAL line and exits 1, and its --help lists only
# the main module's flags (none: they live in towertrain.config.flags).
parse_flags = common.flags_parser(help_text, full_help=True)


def run():
    flags_lib.define_flags()
    common.run_app(main, parse_flags)


if __name__ == "__main__":
    run()
