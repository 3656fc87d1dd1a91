"""Callbacks of the training loop: one concern each (see towertrain.engine.run.loop).

Write your own by subclassing `Callback` and pass it as
`Trainer.train(callbacks=[...])`.
"""
from .base import Callback
from .benchmark_log_file import BenchmarkLogFile
from .cluster_stop import ClusterStop
from .checkpointing import Checkpointer, CheckpointSaver
from .divergence import DivergenceGuard
from .graph_file import GraphFile
from .periodic_eval import PeriodicEval
from .profile import ProfileSteps
from .signals import StopOnSignal
from .step_printer import StepPrinter
from .step_watchdog import StepWatchdog
from .summaries import Summaries
from .trace import StepTrace

__all__ = ["BenchmarkLogFile", "Callback", "CheckpointSaver", "Checkpointer", "ClusterStop",
           "DivergenceGuard", "GraphFile", "PeriodicEval", "ProfileSteps", "StepPrinter",
           "StepTrace", "StepWatchdog", "StopOnSignal", "Summaries", "default_callbacks"]


def default_callbacks(plan, handles, write=print):
    """The callbacks the CLI runs, from the run's plan (towertrain.plan.RunPlan:
    steps, batches, outputs, the cluster) and its handles
    (towertrain.engine.run.handles.RunHandles). With --train_dir this restores
    the latest checkpoint (so the loop starts at its step) and only then records
    the run, so a failed resume leaves the train_dir's record as it was."""
    from towertrain.state import train_dir_lock
    out, warmup = plan.outputs, plan.steps.warmup
    if not plan.topology.is_chief:
        return _worker_callbacks(plan, handles, write)  # multi-worker: the chief writes
    precision = plan.recipe.precision  # a dynamic loss scale: recipe.precision.LossScale
    dynamic = bool(precision.use_fp16 and precision.fp16_enable_auto_loss_scale)
    callbacks = [_watchdog(plan),  # first: off before the others' work after a step
                 DivergenceGuard(handles.learning_rate, dynamic_loss_scale=dynamic,
                                 loss_probe=handles.loss_probe),
                 StepPrinter(out.display_every, warmup, write,
                             print_training_accuracy=out.print_training_accuracy,
                             ewma=out.display_perf_ewma, loss_name=out.loss_type_to_report)]
    summaries = (Summaries(handles, out.logdir, out.summary_verbosity,
                           out.save_summaries_steps, num_warmup_batches=warmup)
                 if out.summary_verbosity else None)
    schedule = plan.steps.eval_schedule
    if schedule is not None:
        callbacks.append(PeriodicEval(handles.evaluator, handles.add_fence, schedule,
                                      handles.eval_data, write,
                                      on_result=summaries and summaries.eval_result,
                                      stop_at_top_1=out.stop_at_top_1_accuracy))
    saver = None
    if out.train_dir:
        checkpointer = Checkpointer(handles, plan, out.train_dir, out.max_ckpts_to_keep)
        checkpointer.check_free_space()  # a disk that cannot hold one: refused now
        # One training run per train_dir: held until the saver's close (or the
        # process's end), released at once if this run is refused below.
        lock = train_dir_lock.acquire(out.train_dir)
        try:
            saver = _resuming_saver(plan, handles, checkpointer, write)
        except BaseException:
            lock.release()
            raise
        saver.lock = lock
        callbacks.append(saver)
    else:
        _agree_on_resume(plan, None, None)
    callbacks.extend(_observers(plan, handles, summaries, write))
    callbacks.append(_stop_on_signal(plan, handles, saver is not None, write))
    return callbacks


def _resuming_saver(plan, handles, checkpointer, write):
    """The CheckpointSaver of the chief's train_dir, its checkpoint restored
    once the run record agrees with this run and the disk has room; then the
    record is rewritten for this run."""
    from towertrain.plan import model_recipe
    from towertrain.state import checkpoint as ckpt_lib
    from towertrain.state import run_record
    out = plan.outputs
    saver = CheckpointSaver(checkpointer, out.save_model_steps, out.save_model_secs, write)
    # Under the lock, so no save of another run is under way there.
    saver.removed = ckpt_lib.remove_unfinished_saves(out.train_dir)
    record, where = run_record.read(out.train_dir), f"--train_dir={out.train_dir}"
    # Another model's run: say so, instead of listing every missing variable.
    model = handles.model.name if handles.user_model else plan.model
    run_record.check(record, {"model": model, "data_name": plan.dataset,
                              run_record.USER_MODEL: handles.user_model}, where)
    recipe = plan.recipe
    state = run_record.state_settings(recipe.optimizer, recipe.precision, recipe.loss)
    changeable = {"accumulation_steps": plan.batches.accumulation_steps,
                  "total_steps": plan.steps.total}
    input_record = run_record.training_input(plan.input.data_name, plan.input.data_dir,
                                             handles.input.num_examples)
    chosen = ckpt_lib.resolve(checkpoint_path=out.checkpoint) if out.checkpoint else None
    if chosen or checkpointer.manager.latest_checkpoint:  # a resume: the same state's meaning
        run_record.check_state_settings(record, state, where)
        # ... and the same input: the checkpoint holds the position in it.
        run_record.check_training_input(record, input_record, plan.input.data_dir, where)
        saver.resume_changes = run_record.changes_at_resume(record, changeable)
    saver.restore(chosen)
    _agree_on_resume(plan, out.train_dir, saver.resumed_from)  # before the record changes
    run_record.write(out.train_dir, run_record.record_of(
        plan.model, plan.dataset, plan.topology.data_format, handles.model,
        state, changeable, data_dir=plan.input.data_dir, user_model=handles.user_model,
        input_record=input_record,
        learning_rate=model_recipe.record_entry(handles.learning_rate)))
    return saver


def _watchdog(plan):
    """The step watchdog of every process (--step_timeout_secs)."""
    return StepWatchdog(plan.runtime.step_timeout_secs, plan.steps.warmup,
                        plan.outputs.train_dir)


def _agree_on_resume(plan, train_dir, path):
    """Multi-worker: every worker restored the same checkpoint (`path`), or
    every one stops here, before any step (engine/run/resume_agreement.py)."""
    if plan.topology.num_workers > 1:
        from towertrain.engine.distributed import cluster as cluster_lib
        from towertrain.engine.run import resume_agreement
        resume_agreement.agree(plan.topology.cluster, train_dir, path,
                               cluster_lib.collective_timeout())


def _stop_on_signal(plan, handles, saves_on_stop, write):
    """SIGINT/SIGTERM handling: multi-worker, every worker stops at one step."""
    if plan.topology.num_workers > 1:
        return ClusterStop(handles, write, train_dir=plan.outputs.train_dir)
    return StopOnSignal(saves_on_stop=saves_on_stop, write=write)


def _observers(plan, handles, summaries, write):
    """TensorBoard summaries, the step trace and the profile, after the restore
    (they start at the resumed step; the summaries read it at the header)."""
    from towertrain.config.observe_checks import parse_profile_steps
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
                          num_batches=plan.steps.timed)
        observers.append(BenchmarkLogFile(out.benchmark_log_dir, out.display_every, warmup,
                                          plan.model, plan.dataset,
                                          plan.topology.tower_devices, parameters))
    if out.profile_steps:
        observers.append(ProfileSteps(*parse_profile_steps(out.profile_steps), out.logdir,
                                      write))
    return observers


def _worker_callbacks(plan, handles, write):
    """A non-chief worker of a multi-worker run: resumes from the chief's latest
    checkpoint in the shared --train_dir, never saves and prints one line."""
    from towertrain.plan import cluster as resolvers
    out = plan.outputs
    write(f"worker {resolvers.describe(plan.topology.cluster)}: training; the chief "
          "(task 0) writes the output and checkpoints")
    path = None
    if out.train_dir:
        from towertrain.state import checkpoint as ckpt_lib
        chosen = ckpt_lib.resolve(checkpoint_path=out.checkpoint) if out.checkpoint else None
        path = Checkpointer(handles, plan, out.train_dir, out.max_ckpts_to_keep,
                            writer=False).restore_latest(chosen)
    _agree_on_resume(plan, out.train_dir, path)
    if path:
        write(f"resumed from the chief's checkpoint {path}")
    callbacks = [_watchdog(plan), DivergenceGuard(handles.learning_rate),
                 StepPrinter(out.display_every, plan.steps.warmup, lambda *_: None)]
    if plan.steps.eval_schedule is not None:  # its share of each eval; the chief prints it
        callbacks.append(PeriodicEval(handles.evaluator, handles.add_fence,
                                      plan.steps.eval_schedule, handles.eval_data, write,
                                      stop_at_top_1=out.stop_at_top_1_accuracy,
                                      print_results=False))
    return callbacks + [ClusterStop(handles, write, train_dir=out.train_dir)]
