"""Eval during training: top-1/top-5 on the eval split every N steps."""
from towertrain.engine import evaluation

from .base import Callback


class PeriodicEval(Callback):
    """Evaluates the primary copy every `every_n_steps` steps on `eval_data`
    (an EvalData, resolved before training so a missing split fails first).
    on_result(step, EvalResult), if given, also gets each result (the
    TensorBoard summaries write it under eval/)."""

    def __init__(self, trainer, every_n_steps, eval_data, write=print, on_result=None):
        self.every_n_steps = every_n_steps
        self.eval_data = eval_data
        self.write = write
        self.on_result = on_result
        self.evaluator = evaluation.Evaluator(trainer)

    def header_info(self):
        return [("Eval data", evaluation.describe(self.eval_data, self.evaluator))]

    def after_step(self, step, result, seconds):
        if step % self.every_n_steps == 0:
            result = self.evaluator.evaluate(self.eval_data)
            self.write(evaluation.format_result(result, step))
            if self.on_result is not None:
                self.on_result(step, result)
