"""Eval during training: top-1/top-5 on the eval split on a schedule
(towertrain.plan.eval_schedule), and --stop_at_top_1_accuracy."""
from towertrain.plan import eval_schedule
from towertrain.engine.evaluation import evaluator as evaluation
from .base import Callback


class PeriodicEval(Callback):
    """Evaluates the primary copy after the steps `schedule` names (an
    EvalSchedule, or an int N: every N steps, as before schedules existed) on
    `eval_data` (an EvalData, resolved before training so a missing split
    fails first), with `evaluator` (towertrain.engine.evaluation.evaluator's
    Evaluator); add_fence(step): the input position's fence (RunHandles).
    on_result(step, EvalResult), if given, also gets each result (the
    TensorBoard summaries write it under eval/).

    stop_at_top_1: once a result's top-1 reaches it, the run stops right there
    (no later eval, no draining: each eval step is a staging fence) and the
    stop counts as the run's end (its checkpoint is the final one). On several
    workers every worker has this callback and gets the same result
    (engine.evaluation.cluster_eval), so all stop at that step; a non-chief's
    (print_results=False) writes only its stop, with the step.
    """

    def __init__(self, evaluator, add_fence, schedule, eval_data, write=print,
                 on_result=None, stop_at_top_1=None, print_results=True):
        if isinstance(schedule, int):
            schedule = eval_schedule.EvalSchedule(None, every_n_steps=schedule)
        self.schedule = schedule
        self.eval_data = eval_data
        self.write = write
        self.on_result = on_result
        self.stop_at_top_1 = stop_at_top_1
        self.print_results = print_results
        self.evaluator = evaluator
        self.add_fence = add_fence

    def header_info(self):
        info = [("Eval data", evaluation.describe(self.eval_data, self.evaluator))]
        if self.schedule.total_steps is not None:
            info.append(("Eval", self.schedule.describe() + (
                f"; stop at top-1 >= {self.stop_at_top_1:g}" if self.stop_at_top_1 else "")))
        return info

    def before_train(self, loop):
        super().before_train(loop)
        if self.schedule.total_steps is None:  # an int schedule: the loop's end
            self.schedule = eval_schedule.EvalSchedule(
                loop.total_steps, every_n_steps=self.schedule.every_n_steps)
        self._fence_after(loop.start_step)

    def _fence_after(self, step):
        # Nothing staged past an eval step: a stop there leaves the input exact.
        following = self.schedule.next_after(step)
        if following is not None:
            self.add_fence(following)

    def after_step(self, step, result, seconds):
        if self.schedule.due(step):  # the run's last step is always due
            self._evaluate(step)
            self._fence_after(step)

    def _evaluate(self, step):
        result = self.evaluator.evaluate(self.eval_data)
        if self.print_results:
            self.write(evaluation.format_result(result, step))
        if self.on_result is not None:
            self.on_result(step, result)
        if self.stop_at_top_1 is not None and result.top1 >= self.stop_at_top_1:
            # tf_cnn_benchmarks' line; the run ends here, its checkpoint is final.
            self.write(f"Stopping, as eval accuracy at least {self.stop_at_top_1:g} was "
                       "reached" + ("" if self.print_results else f" (step {step})"))
            self.loop.request_stop(f"--stop_at_top_1_accuracy={self.stop_at_top_1:g} "
                                   f"(top-1 {result.top1:.4f} at step {step})", final=True)
