"""Your own callback: stop when the loss falls below a target, and keep a history.

    TOWERTRAIN_TINY=1 python examples/custom_callback.py

Subclass towertrain.Callback and override what you need: before_train(loop),
before_step(step), after_step(step, result, seconds), after_train(), close().
`self.loop.request_stop(reason)` ends the run after the current step (and any
batches already staged on the devices). Here the loss reaches the target well
before --num_batches, at tiny size too, so the run stops early.
"""
import os

import numpy as np

import towertrain

TINY = os.environ.get("TOWERTRAIN_TINY") == "1"


class LossHistory(towertrain.Callback):
    """Records every step's loss; stops the run once it is below `target`."""

    def __init__(self, target):
        self.target = target
        self.losses = []

    def after_step(self, step, result, seconds):
        self.losses.append(result.loss)
        if result.loss < self.target:
            self.loop.request_stop(f"loss {result.loss:.3f} < {self.target}")

    def after_train(self):
        print(f"LossHistory: {len(self.losses)} of {self.loop.total_steps} steps, "
              f"last loss {self.losses[-1]:.4f}")
        if self.loop.stop_reason:
            print(f"LossHistory: stopped early: {self.loop.stop_reason}")


def main():
    import keras
    towertrain.use_logical_cpus(2)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 256)
    images = 0.3 * rng.standard_normal((256, 8, 8, 1)).astype(np.float32)
    images[np.arange(256), 2 * labels] += 1.0  # learnable: the label lights a row
    model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(name="flat"),
                              keras.layers.Dense(4, name="logits")], name="linear")
    params = towertrain.Params(device="cpu", num_gpus=2, init_learning_rate=0.5,
                               num_warmup_batches=0, num_batches=40 if TINY else 500,
                               display_every=5 if TINY else 50)
    history = LossHistory(target=0.05)
    trainer = towertrain.Trainer(params, model=model,
                                 input_source=towertrain.from_arrays(images, labels, 32))
    trainer.train(callbacks=[history])
    trainer.close()


if __name__ == "__main__":
    main()
