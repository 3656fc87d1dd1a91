"""Callbacks of the training loop: one concern each (see towertrain.engine.run.loop).

Write your own by subclassing `Callback` and pass it as
`Trainer.train(callbacks=[...])`.
"""
from towertrain.engine.run.settings import parse_profile_steps

from .base import Callback
from .benchmark_log_file import BenchmarkLogFile
from .cluster_stop import ClusterStop
from .checkpointing import CheckpointSaver
from .divergence import DivergenceGuard
from .graph_file import GraphFile
from .periodic_eval import PeriodicEval
from .profile import ProfileSteps
from .signals import StopOnSignal
from .step_printer import StepPrinter
from .step_watchdog import StepWatchdog
from .straggler_report import StragglerReport
from .summaries import Summaries
from .trace import StepTrace

__all__ = ["BenchmarkLogFile", "Callback", "CheckpointSaver", "ClusterStop",
           "DivergenceGuard", "GraphFile", "PeriodicEval", "ProfileSteps", "StepPrinter",
           "StepTrace", "StepWatchdog", "StopOnSignal", "Summaries", "default_callbacks"]


def default_callbacks(plan, handles, resumed, write=print):
    """The callbacks the CLI runs, from the run's plan (towertrain.plan.RunPlan:
    steps, batches, outputs, the cluster), its handles
    (towertrain.engine.run.handles.RunHandles) and what its resume did
    (towertrain.state.resume.Resumed: with --train_dir, the chief's
    checkpointer and the train_dir's lock, which the saver frees at close).
    They only save and observe: the restore was the resume's."""
    out, warmup = plan.outputs, plan.steps.warmup
    if not plan.topology.is_chief:
        return _worker_callbacks(plan, handles, write)  # multi-worker: the chief writes
    dynamic = plan.recipe.precision.dynamic_loss_scale  # recipe.precision.LossScale's
    callbacks = [_watchdog(plan),  # first: off before the others' work after a step
                 DivergenceGuard(handles.learning_rate, dynamic_loss_scale=dynamic,
                                 loss_probe=handles.loss_probe),
                 StepPrinter(out, warmup, write,
                             print_training_accuracy=out.print_training_accuracy,
                             ewma=out.display_perf_ewma, loss_name=out.loss_type_to_report)]
    summaries = (Summaries(handles, out.logdir, out.summary_verbosity,
                           out.save_summaries_steps, num_warmup_batches=warmup)
                 if out.summaries_on else None)
    schedule = plan.steps.eval_schedule
    if schedule is not None:
        callbacks.append(PeriodicEval(handles.evaluator, handles.add_fence, schedule,
                                      handles.eval_data, write,
                                      on_result=summaries and summaries.eval_result,
                                      stop_at_top_1=out.stop_at_top_1_accuracy))
    saver = None
    if resumed.checkpointer is not None:
        saver = CheckpointSaver(resumed.checkpointer, out.save_model_steps,
                                out.save_model_secs, write, resumed=resumed)
        callbacks.append(saver)
    callbacks.extend(_observers(plan, handles, summaries, write))
    threshold = handles.settings.get("straggler_threshold", 0)
    if plan.topology.num_workers > 1 and threshold:
        callbacks.append(StragglerReport(plan.topology.cluster, out.display_every, threshold,
                                         write,
                                         on_window=summaries and summaries.extra_scalars))
    callbacks.append(_stop_on_signal(plan, handles, saver is not None, write))
    return callbacks


def _watchdog(plan):
    """The step watchdog of every process (--step_timeout_secs)."""
    return StepWatchdog(plan.runtime.step_timeout_secs, plan.steps.warmup,
                        plan.outputs.train_dir, cluster=plan.topology.cluster)


def _stop_on_signal(plan, handles, saves_on_stop, write):
    """SIGINT/SIGTERM handling: multi-worker, every worker stops at one step."""
    if plan.topology.num_workers > 1:
        return ClusterStop(handles, write, train_dir=plan.outputs.train_dir,
                           save_steps=plan.outputs.save_model_steps)
    return StopOnSignal(saves_on_stop=saves_on_stop, write=write)


def _observers(plan, handles, summaries, write):
    """TensorBoard summaries, the step trace and the profile (they start at the
    resumed step; the summaries read it at the header)."""
    out, warmup = plan.outputs, plan.steps.warmup
    observers = [summaries] if summaries else []
    if out.trace_file:
        observers.append(StepTrace(out.trace_file, out.trace_step, warmup,
                                   write, chrome=out.use_chrome_trace_format))
    if out.graph_file:
        observers.append(GraphFile(handles.trace_step, out.graph_file, write))
    if out.benchmark_log_dir:
        parameters = dict(handles.settings, model=plan.model,
                          batch_size=plan.batches.global_batch,
                          batch_size_per_device=plan.batches.per_device,
                          num_batches=plan.steps.timed, **plan.exchange.as_settings())
        observers.append(BenchmarkLogFile(out.benchmark_log_dir, out, warmup,
                                          plan.model, plan.dataset,
                                          plan.topology.tower_devices, parameters))
    if out.profile_steps:
        observers.append(ProfileSteps(*parse_profile_steps(out.profile_steps), out.logdir,
                                      write))
    return observers


def _worker_callbacks(plan, handles, write):
    """A non-chief worker of a multi-worker run: resumed from the chief's latest
    checkpoint (towertrain.state.resume), never saves and prints one line."""
    out = plan.outputs
    callbacks = [_watchdog(plan), DivergenceGuard(handles.learning_rate),
                 StepPrinter(out, plan.steps.warmup, lambda *_: None)]
    if plan.steps.eval_schedule is not None:  # its share of each eval; the chief prints it
        callbacks.append(PeriodicEval(handles.evaluator, handles.add_fence,
                                      plan.steps.eval_schedule, handles.eval_data, write,
                                      stop_at_top_1=out.stop_at_top_1_accuracy,
                                      print_results=False))
    return callbacks + [ClusterStop(handles, write, train_dir=out.train_dir,
                                    save_steps=out.save_model_steps)]
