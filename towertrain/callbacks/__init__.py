"""Callbacks of the training loop: one concern each (see towertrain.engine.run.loop).

Write your own by subclassing `Callback` and pass it as
`Trainer.train(callbacks=[...])`.
"""
from .base import Callback
from .benchmark_log_file import BenchmarkLogFile
from .cluster_stop import ClusterStop
from .checkpointing import Checkpointer, CheckpointSaver, run_record_of
from .divergence import DivergenceGuard
from .graph_file import GraphFile
from .periodic_eval import PeriodicEval
from .profile import ProfileSteps
from .signals import StopOnSignal
from .step_printer import StepPrinter
from .summaries import Summaries
from .trace import StepTrace

__all__ = ["BenchmarkLogFile", "Callback", "CheckpointSaver", "Checkpointer", "ClusterStop",
           "DivergenceGuard", "GraphFile", "PeriodicEval", "ProfileSteps", "StepPrinter",
           "StepTrace", "StopOnSignal", "Summaries", "default_callbacks"]


def default_callbacks(trainer, write=print, eval_data=None):
    """The callbacks the CLI runs, from the trainer's Params. With --train_dir this
    restores the latest checkpoint (so the loop starts at its step) and only then
    records the run, so a failed resume leaves the train_dir's record as it was."""
    from towertrain.state import checkpoint as ckpt_lib
    from towertrain.plan import eval_schedule
    from towertrain.engine.evaluation import evaluator as evaluation
    from towertrain.recipe import lr_schedule
    from towertrain.state import run_record
    p = trainer.params
    cluster = getattr(trainer, "cluster", None)
    if cluster is not None and not cluster.is_chief:
        return _worker_callbacks(trainer, write)  # multi-worker: the chief writes
    dynamic = bool(trainer.loss_scale and trainer.loss_scale.dynamic)
    callbacks = [DivergenceGuard(trainer.learning_rate, dynamic_loss_scale=dynamic),
                 StepPrinter(p.display_every, trainer.num_warmup_batches, write,
                             print_training_accuracy=p.print_training_accuracy,
                             ewma=p.display_perf_ewma, loss_name=p.loss_type_to_report)]
    logdir = p.summary_dir or p.train_dir
    summaries = (Summaries(trainer, logdir, p.summary_verbosity, p.save_summaries_steps)
                 if p.summary_verbosity else None)
    schedule = trainer.plan.steps.eval_schedule
    if schedule is not None:
        data = evaluation.eval_data_for(trainer.input, trainer.plan.batches.eval_per_process,
                                        trainer.plan.outputs, eval_data)
        callbacks.append(PeriodicEval(trainer, schedule, data, write,
                                      on_result=summaries and summaries.eval_result,
                                      stop_at_top_1=p.stop_at_top_1_accuracy))
    saver = None
    if p.train_dir:
        saver = CheckpointSaver(Checkpointer(trainer, p.train_dir, p.max_ckpts_to_keep),
                                p.save_model_steps, p.save_model_secs, write)
        # Another model's run: say so, instead of listing every missing variable.
        run_record.check(run_record.read(p.train_dir), p, f"--train_dir={p.train_dir}")
        saver.restore()
        ckpt_lib.write_run_info(p.train_dir, run_record_of(trainer))
        callbacks.append(saver)
    callbacks.extend(_observers(trainer, summaries, logdir, write))
    callbacks.append(_stop_on_signal(trainer, saver is not None, write))
    return callbacks


def _stop_on_signal(trainer, saves_on_stop, write):
    """SIGINT/SIGTERM handling: multi-worker, every worker stops at one step."""
    if trainer.num_workers > 1:
        return ClusterStop(trainer, write)
    return StopOnSignal(saves_on_stop=saves_on_stop, write=write)


def _observers(trainer, summaries, logdir, write):
    """TensorBoard summaries, the step trace and the profile, after the restore
    (they start at the resumed step; the summaries read it at the header)."""
    from towertrain.config.observe_checks import parse_profile_steps
    p = trainer.params
    observers = [summaries] if summaries else []
    if p.trace_file:
        observers.append(StepTrace(p.trace_file, p.trace_step, trainer.num_warmup_batches,
                                   write, chrome=p.use_chrome_trace_format))
    if p.graph_file:
        observers.append(GraphFile(trainer, p.graph_file, write))
    if p.benchmark_log_dir:
        observers.append(BenchmarkLogFile(trainer, p.benchmark_log_dir, p.display_every,
                                          trainer.num_warmup_batches))
    if p.profile_steps:
        observers.append(ProfileSteps(*parse_profile_steps(p.profile_steps), logdir, write))
    return observers


def _worker_callbacks(trainer, write):
    """A non-chief worker of a multi-worker run: resumes from the chief's latest
    checkpoint in the shared --train_dir, never saves and prints one line."""
    from towertrain.plan import cluster as resolvers
    p = trainer.params
    write(f"worker {resolvers.describe(trainer.cluster)}: training; the chief "
          "(task 0) writes the output and checkpoints")
    if p.train_dir:
        path = Checkpointer(trainer, p.train_dir, p.max_ckpts_to_keep).restore_latest()
        if path:
            write(f"resumed from the chief's checkpoint {path}")
    return [DivergenceGuard(trainer.learning_rate),
            StepPrinter(p.display_every, trainer.num_warmup_batches, lambda *_: None),
            ClusterStop(trainer, write)]
