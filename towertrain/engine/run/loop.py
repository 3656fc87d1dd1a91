"""The main loop: a few lines that call the step and the callbacks.

    before_train(loop)                 # after restore: loop.start_step is known
    for step in start + 1 .. total:
        before_step(step)
        result = handles.step()        # the tf.function: input, towers, update
        after_step(step, result)       # a callback may call loop.request_stop()
    after_train()                      # a finished or stopped run (not a failed one)
    close()                            # always; loop.error says if a step raised

A stop request (a signal, a callback) first trains on the batches already
staged on the devices, so the input position saved afterwards is exact.
Everything else (output, checkpoints, eval, divergence) is a callback
(towertrain.callbacks). The loop never sees the Trainer: it drives the run
through a few handles (towertrain.engine.run.handles.RunHandles).
"""
import collections
import time

TrainResult = collections.namedtuple("TrainResult", "images_per_sec final_loss steps")


class Loop:
    """One run of the loop: what callbacks may read and ask for.

    handles: the run's RunHandles (step, global_step, begin, drain,
    header_info, ...); callbacks read them as `loop.handles`.
    total_steps: the global step the run ends at (the plan's steps.total).
    """

    def __init__(self, handles, callbacks, total_steps, write=print):
        self.handles = handles
        self.callbacks = list(callbacks)
        self.write = write
        self.start_step = handles.global_step()
        self.total_steps = total_steps
        self.step = self.start_step  # the last finished step
        self.stop_reason = None
        self.stop_is_final = False  # the stop ends the run (a goal reached), not pauses it
        self.error = None  # the exception that ended the run, if one did
        self.images_per_sec = 0.0  # set by the step logger
        self.final_loss = float("nan")

    def request_stop(self, reason, final=False):
        """Stops after the staged batches are trained on; the first reason is kept.
        final: the run is complete (e.g. --stop_at_top_1_accuracy reached), so its
        last checkpoint is recorded as the final one."""
        if self.stop_reason is None:
            self.stop_reason = reason
            self.stop_is_final = final

    @property
    def completed(self):
        """Whether the run reached its end: its last step, or a final stop."""
        return self.step >= self.total_steps or self.stop_is_final

    def header_info(self):
        """The run's header: the trainer's facts, then each callback's."""
        info = list(self.handles.header_info())
        for callback in self.callbacks:
            info.extend(callback.header_info())
        return info

    def _call(self, hook, *args):
        for callback in self.callbacks:
            getattr(callback, hook)(*args)

    def run(self):
        handles = self.handles
        try:
            handles.begin(self.start_step)
            self._call("before_train", self)
            draining = None
            while self.step < self.total_steps:
                if self.stop_reason is not None and draining is None:
                    draining = handles.drain()
                if draining == 0:
                    break
                step = self.step + 1
                self._call("before_step", step)
                outputs = max(c.step_outputs(step) for c in self.callbacks) if (
                    self.callbacks) else 0
                started = time.perf_counter()
                result = handles.step(outputs)
                seconds = time.perf_counter() - started
                self.step = step
                self.final_loss = result.loss
                self._call("after_step", step, result, seconds)
                if draining:
                    draining -= 1
            self._call("after_train")
        except BaseException as err:
            self.error = err  # close() hooks may act on what stopped the run
            raise
        finally:
            self._call("close")
        return TrainResult(self.images_per_sec, self.final_loss, handles.global_step())


def run(handles, callbacks, total_steps, write=print):
    """Runs from the global step to `total_steps` with `callbacks`, stepping
    through `handles` (a RunHandles)."""
    return Loop(handles, callbacks, total_steps, write).run()
