"""Staging benchmark: does the StagingArea hide input latency behind compute?

An input takes X ms per batch (a sleep in tf.py_function, inside the step, as
a synchronous feed would) and the model step takes about Y ms (real compute:
a stack of Dense layers). Without staging a step costs about X + Y; with one
batch staged per device, the next batch is fetched while this one computes,
so a step costs about max(X, Y).

    python bench/bench_staging.py --latency_ms=40 --num_steps=30

Y is measured first (same model, no latency); runs with and without staging
are interleaved `--repeats` times and medians are reported (this machine's
timings vary +-20% run to run).
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from towertrain import Params, Trainer  # noqa: E402
from towertrain.engine.process import devices
from towertrain.input_pipeline import split_to_devices  # noqa: E402
from towertrain.input_pipeline.base import Input  # noqa: E402


class SlowInput(Input):
    """A fixed global batch that takes `latency_ms` to arrive each step: a
    tf.data pipeline with no prefetch whose map sleeps in tf.py_function, so
    the wait sits inside the step's get-next, as with a slow reader.

    (A py_function placed directly in the step graph is a synchronous kernel
    that can hold up the executor thread other ready ops are queued on, so it
    would not model a reader; the iterator's get-next runs asynchronously.)
    """

    name = "slow"

    def __init__(self, global_batch, features, latency_ms):
        self.global_batch = global_batch
        self.latency_s = latency_ms / 1000.0
        rng = np.random.RandomState(0)
        self._images = rng.randn(global_batch, features).astype(np.float32)
        self._labels = rng.randint(0, 10, global_batch).astype(np.int32)
        self._iterator = None

    def _sleep(self):
        time.sleep(self.latency_s)
        return np.int32(0)

    def _delay(self, images, labels):
        token = tf.py_function(self._sleep, [], tf.int32)
        with tf.control_dependencies([token]):  # the batch exists only after the wait
            return tf.identity(images), tf.identity(labels)

    def create(self, devices_):
        del devices_
        options = tf.data.Options()
        options.experimental_optimization.inject_prefetch = False  # keep it synchronous
        with tf.device("/cpu:0"):
            dataset = tf.data.Dataset.from_tensors((self._images, self._labels)).repeat()
            dataset = dataset.map(self._delay).with_options(options)
            self._iterator = iter(dataset)

    def tower_batches(self, devices_):
        with tf.device("/cpu:0"):
            batch = next(self._iterator)
        return split_to_devices(batch, devices_)


def make_model(features, width, depth):
    layers = [keras.Input((features,))]
    layers += [keras.layers.Dense(width, activation="relu") for _ in range(depth)]
    layers.append(keras.layers.Dense(10))
    return keras.Sequential(layers)


def steps_per_sec(args, latency_ms, staging_depth):
    total = args.num_warmup + args.num_steps
    params = Params(device="cpu", num_gpus=args.num_devices, num_batches=total,
                    num_warmup_batches=0, staging_depth=staging_depth,
                    init_learning_rate=0.001)
    keras.utils.set_random_seed(0)
    trainer = Trainer(params, model=make_model(args.features, args.width, args.depth),
                      input_source=SlowInput(args.global_batch, args.features, latency_ms))
    for _ in range(args.num_warmup):
        float(trainer.step())
    start = time.perf_counter()
    for _ in range(args.num_steps):
        float(trainer.step())
    rate = args.num_steps / (time.perf_counter() - start)
    trainer.close()
    return rate


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency_ms", type=float, default=50.0, help="X: input latency")
    parser.add_argument("--num_devices", type=int, default=2)
    parser.add_argument("--global_batch", type=int, default=256)
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--width", type=int, default=1024, help="model size (sets Y)")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--num_steps", type=int, default=20)
    parser.add_argument("--num_warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    devices.ensure_logical_cpus(args.num_devices)

    x = args.latency_ms / 1000.0
    ys, staged, unstaged, scores = [], [], [], []
    for _ in range(args.repeats):  # interleaved rounds, so drift hits all three alike
        ys.append(1.0 / steps_per_sec(args, 0.0, 0))
        unstaged.append(steps_per_sec(args, args.latency_ms, 0))
        staged.append(steps_per_sec(args, args.latency_ms, 1))
        scores.append(staged[-1] * max(x, ys[-1]))
    y = statistics.median(ys)
    staged_rate, unstaged_rate = statistics.median(staged), statistics.median(unstaged)
    ratios = [s / u for s, u in zip(staged, unstaged)]
    print(f"X (input latency)       = {x * 1000:7.1f} ms")
    print(f"Y (model step, no wait) = {y * 1000:7.1f} ms  (median of {args.repeats})")
    print(f"without staging: {unstaged_rate:6.2f} steps/s   1/(X+Y)    = {1 / (x + y):6.2f}")
    print(f"with staging:    {staged_rate:6.2f} steps/s   1/max(X,Y) = {1 / max(x, y):6.2f}")
    print(f"staged * max(X,Y) = {statistics.median(scores):.2f} (target >= 0.9); "
          f"per round {[round(v, 2) for v in scores]}")
    print(f"staged / unstaged = {statistics.median(ratios):.2f}x (ideal (X+Y)/max(X,Y) = "
          f"{(x + y) / max(x, y):.2f}x); per round {[round(v, 2) for v in ratios]}")

if __name__ == "__main__":
    main()
