"""The callback interface of the training loop (towertrain.engine.run.loop)."""


class Callback:
    """One concern of a run (output, checkpoints, eval, ...). Override what you need.

    Hooks, in order: before_train(loop) once the start step is known (after a
    resume); before_step(step), step_outputs(step) (extra outputs wanted from
    that step) and after_step(step, result, seconds) around each
    step, where `step` is the global step being trained, `result` a
    StepResult (loss, examples, finite) and `seconds` the step's wall time;
    after_train() when the run finished or was stopped; close() always, also
    after an error. `loop.request_stop(reason)` ends the run early.
    """

    loop = None

    def header_info(self):
        """(label, value) pairs this callback adds to the run's header."""
        return []

    def before_train(self, loop):
        self.loop = loop

    def before_step(self, step):
        pass

    def step_outputs(self, step):
        """What this callback needs from step `step` beyond the usual extras:
        towertrain.engine.step.step_outputs.GRAD_NORM or GRADIENTS (0: nothing)."""
        return 0

    def after_step(self, step, result, seconds):
        pass

    def after_train(self):
        pass

    def close(self):
        pass
