"""Fused batch norm vs Keras BatchNormalization: images/sec of one network.

    python bench/bench_batchnorm.py --model=resnet20 --batch_size=64 --rounds=5

The registry model (FusedBatchNormalization) and a clone of it with every BN
layer swapped for keras.layers.BatchNormalization (same variables and
hyperparameters) are trained through the engine in one process, timed in
interleaved rounds (this machine's speed drifts +-20% run to run, so only
side-by-side numbers are compared). Prints each round, the medians and the
fused/stock ratio.
"""
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

flags.DEFINE_string("model", "resnet20", "Registered model name (one with batch norm).")
flags.DEFINE_integer("batch_size", 64, "Batch per device.")
flags.DEFINE_integer("num_devices", 1, "Logical CPU devices.")
flags.DEFINE_enum("data_format", "NHWC", ["NHWC", "NCHW"], "Data format.")
flags.DEFINE_integer("steps", 20, "Timed steps per contender per round.")
flags.DEFINE_integer("rounds", 5, "Interleaved rounds.")
FLAGS = flags.FLAGS


def with_stock_batch_norm(model):
    """The same network with keras.layers.BatchNormalization in place of the fused layer."""
    import keras
    from towertrain import models

    def clone(layer):
        if isinstance(layer, models.FusedBatchNormalization):
            return keras.layers.BatchNormalization(
                axis=layer.axis, momentum=layer.momentum, epsilon=layer.epsilon,
                center=layer.center, scale=layer.scale, name=layer.name)
        return layer.__class__.from_config(layer.get_config())
    return keras.models.clone_model(model, clone_function=clone)


def runner(stock):
    import tensorflow as tf
    from towertrain import Params, Trainer, models
    update = "replicated" if FLAGS.num_devices > 1 else "parameter_server"
    params = Params(device="cpu", num_gpus=FLAGS.num_devices,
                    batch_size=FLAGS.batch_size, data_format=FLAGS.data_format,
                    variable_update=update)
    with tf.device("/cpu:0"):
        model = models.build(FLAGS.model, data_format=FLAGS.data_format)
        if stock:
            model = with_stock_batch_norm(model)
    trainer = Trainer(params, model=model)
    float(trainer.step())  # trace and warm up
    float(trainer.step())
    images_per_step = FLAGS.batch_size * FLAGS.num_devices

    def run(steps):
        start = time.perf_counter()
        for _ in range(steps):
            loss = trainer.step()
        float(loss)
        return steps * images_per_step / (time.perf_counter() - start)
    return run


def main(_):
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * FLAGS.num_devices)
    contenders = {"fused (FusedBatchNormalization)": runner(stock=False),
                  "keras (BatchNormalization)": runner(stock=True)}
    results = {name: [] for name in contenders}
    print(f"{FLAGS.model}, {FLAGS.num_devices} device(s) x batch {FLAGS.batch_size}, "
          f"{FLAGS.data_format}, {FLAGS.steps} steps x {FLAGS.rounds} rounds")
    for r in range(FLAGS.rounds):
        # Alternate who goes first, so drift within a round favours neither.
        order = list(contenders) if r % 2 == 0 else list(reversed(contenders))
        for name in order:
            results[name].append(contenders[name](FLAGS.steps))
        print(f"round {r + 1}: " + ", ".join(f"{n.split()[0]} {results[n][-1]:.1f}"
                                             for n in contenders), flush=True)
    medians = {name: statistics.median(v) for name, v in results.items()}
    print("\n| batch norm | images/sec (median) |\n|---|---:|")
    for name, value in medians.items():
        print(f"| {name} | {value:.1f} |")
    fused, stock = medians.values()
    print(f"\nfused / keras = {fused / stock:.2f}x")


if __name__ == "__main__":
    app.run(main)
