"""The loop drives a run through its handles alone (towertrain.engine.run.handles):
plain callables, no Trainer. A stop first trains on what is staged."""
from towertrain import Callback, StepResult
from towertrain.engine.run.handles import RunHandles
from towertrain.engine.run.loop import Loop


class _StopAfter(Callback):
    def __init__(self, step):
        self.step, self.seen = step, []

    def after_step(self, step, result, seconds):
        self.seen.append((step, self.loop.handles.global_step()))
        if step == self.step:
            self.loop.request_stop("test")


def test_the_loop_steps_through_its_handles_and_drains_the_staged_batches_on_a_stop():
    state = {"step": 2, "begun": [], "outputs": []}

    def step(outputs):
        state["step"] += 1
        state["outputs"].append(outputs)
        return StepResult(0.5, 4, True)

    handles = RunHandles(step=step, global_step=lambda: state["step"],
                         begin=state["begun"].append, drain=lambda: 1,
                         header_info=lambda: [("Model", "fake")])
    stopper = _StopAfter(4)
    loop = Loop(handles, [stopper], total_steps=10)
    result = loop.run()
    assert state["begun"] == [2]  # the resumed step
    # Step 4 asked to stop; one batch was staged, so step 5 trains on it.
    assert stopper.seen == [(3, 3), (4, 4), (5, 5)]
    assert (result.steps, result.final_loss, loop.stop_reason) == (5, 0.5, "test")
    assert state["outputs"] == [0, 0, 0]
    assert loop.header_info() == [("Model", "fake")]
