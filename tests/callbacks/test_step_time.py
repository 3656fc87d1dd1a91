"""A step counts only its own time: a slow callback between steps (an eval, a
checkpoint save) is left out of images/sec (docs/observing.md)."""
import time

from towertrain import Params, Trainer
from towertrain.callbacks import Callback

PAUSE = 0.25  # seconds spent between steps


class SlowBetweenSteps(Callback):
    """Records each step's wall time from before_step to after_step (an upper
    bound of the step's own time), then sleeps as a slow save would."""

    def __init__(self):
        self.walls, self.reported = [], []
        self._began = None

    def before_step(self, step):
        self._began = time.perf_counter()

    def after_step(self, step, result, seconds):
        self.walls.append(time.perf_counter() - self._began)
        self.reported.append(seconds)
        time.sleep(PAUSE)


def test_time_spent_between_steps_is_not_step_time():
    params = Params(model="trivial", device="cpu", num_gpus=1, batch_size=4,
                    num_batches=4, num_warmup_batches=1, display_every=1)
    slow = SlowBetweenSteps()
    lines = []
    result = Trainer(params).train(write=lines.append, callbacks=[slow])
    assert len(slow.reported) == 5
    for wall, reported in zip(slow.walls, slow.reported):
        assert reported <= wall, (slow.reported, slow.walls)  # the pause never counts
    # images/sec of the timed steps: at least their examples over their wall
    # time (counting the pauses would put it below 4 x 4 / (4 x PAUSE) = 16).
    assert result.images_per_sec >= 4 * 4 / sum(slow.walls[1:])
    assert any(line.startswith("total images/sec:") for line in lines)
