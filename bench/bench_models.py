"""Images/sec of every registered model through the engine on CPU, as a markdown table.

    python bench/bench_models.py --batch_size=8 --steps=5 [--models=resnet20,vgg16]

Each model trains at its default image size on --num_devices logical CPU
devices x --batch_size (synthetic data, sgd). After --warmup steps (the first
one traces the graph), --steps steps are timed. Slow on a 2-core machine:
the ImageNet models take several seconds per step at 224x224.
"""
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

flags.DEFINE_integer("batch_size", 8, "Batch per device.")
flags.DEFINE_integer("num_devices", 1, "Logical CPU devices.")
flags.DEFINE_enum("data_format", "NHWC", ["NHWC", "NCHW"], "Data format.")
flags.DEFINE_integer("warmup", 2, "Untimed steps (the first traces the graph).")
flags.DEFINE_integer("steps", 5, "Timed steps per model.")
flags.DEFINE_list("models", [], "Models to run; default all registered.")
FLAGS = flags.FLAGS


def measure(name):
    import keras
    from towertrain import Params, Trainer, models
    update = "replicated" if FLAGS.num_devices > 1 else "parameter_server"
    params = Params(model=name, device="cpu", num_gpus=FLAGS.num_devices,
                    batch_size=FLAGS.batch_size, data_format=FLAGS.data_format,
                    variable_update=update)
    start = time.perf_counter()
    trainer = Trainer(params)
    for _ in range(FLAGS.warmup):
        float(trainer.step())
    setup = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(FLAGS.steps):
        loss = trainer.step()
    float(loss)
    elapsed = time.perf_counter() - start
    row = (name, models.get_spec(name).default_image_size, trainer.model.count_params(),
           FLAGS.steps * FLAGS.batch_size * FLAGS.num_devices / elapsed, setup)
    keras.backend.clear_session()
    return row


def main(_):
    import tensorflow as tf
    from towertrain import models
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * FLAGS.num_devices)
    names = FLAGS.models or models.registered_names()
    print(f"{FLAGS.num_devices} CPU device(s) x batch {FLAGS.batch_size}, {FLAGS.data_format}, "
          f"{FLAGS.steps} timed steps after {FLAGS.warmup} warmup; TF {tf.__version__}\n")
    print("| model | image size | parameters | images/sec | setup s |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        model, size, count, rate, setup = measure(name)
        print(f"| {model} | {size} | {count:,} | {rate:.1f} | {setup:.0f} |", flush=True)


if __name__ == "__main__":
    app.run(main)
