"""towertrain vs Keras fit under MirroredStrategy, same model, devices and batch.

    python bench/bench_vs_mirrored.py --model=resnet20 --num_devices=2 --batch_size=32

Four contenders are built once in one process and timed in interleaved
rounds (this machine's speed drifts +-20%, so only side-by-side numbers are
compared): towertrain on N logical CPU devices x B; Keras fit with
MirroredStrategy on the same N devices x B, once with the network as a Keras
user writes it (keras.layers.BatchNormalization) and once with towertrain's
fused batch-norm layer; and towertrain on 1 device x N*B. Prints each round,
the medians and the ratios.
"""
import os
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

flags.DEFINE_string("model", "resnet20", "Registered model name.")
flags.DEFINE_integer("num_devices", 2, "Logical CPU devices.")
flags.DEFINE_integer("batch_size", 32, "Batch per device.")
flags.DEFINE_integer("steps", 30, "Timed steps per contender per round.")
flags.DEFINE_integer("rounds", 5, "Interleaved rounds.")
flags.DEFINE_string("variable_update", "replicated", "towertrain --variable_update.")
flags.DEFINE_string("all_reduce_spec", "pscpu", "towertrain --all_reduce_spec.")
flags.DEFINE_bool("keras_jit", False, "jit_compile for Keras fit (towertrain runs without XLA).")
FLAGS = flags.FLAGS


def towertrain_runner(num_devices, batch_size):
    from towertrain import Params
    from towertrain.commands.scaling import TowertrainRunner
    update = FLAGS.variable_update if num_devices > 1 else "parameter_server"
    params = Params(model=FLAGS.model, device="cpu", num_gpus=num_devices,
                    batch_size=batch_size, variable_update=update,
                    all_reduce_spec=FLAGS.all_reduce_spec if update == "replicated" else None)
    # Three warmup steps, as many as the Keras contender's warmup.
    return TowertrainRunner(params, warmup_steps=3)


def mirrored_runner(num_devices, batch_size, stock_batch_norm):
    from towertrain import Params
    from towertrain.commands.scaling import MirroredRunner
    params = Params(model=FLAGS.model, device="cpu", batch_size=batch_size,
                    data_format="NHWC", xla_compile=FLAGS.keras_jit)
    return MirroredRunner(params, [f"/cpu:{i}" for i in range(num_devices)],
                          stock_batch_norm=stock_batch_norm, warmup_steps=3)


def main(argv):
    del argv
    from towertrain.engine.process import devices
    devices.ensure_logical_cpus(FLAGS.num_devices)
    n, b = FLAGS.num_devices, FLAGS.batch_size
    contenders = {
        f"towertrain {n}x{b}": towertrain_runner(n, b),
        f"Keras fit Mirrored {n}x{b} (Keras BN)": mirrored_runner(n, b, True),
        f"Keras fit Mirrored {n}x{b} (fused BN)": mirrored_runner(n, b, False),
        f"towertrain 1x{n * b}": towertrain_runner(1, n * b),
    }
    for run in contenders.values():  # untimed: a first call after others traced is slow
        run(1)                        # (see towertrain.commands.scaling.time_rounds)
    results = {name: [] for name in contenders}
    for round_index in range(FLAGS.rounds):
        for name, run in contenders.items():
            results[name].append(run(FLAGS.steps))
        print(f"round {round_index + 1}: " + ", ".join(
            f"{name} {values[-1]:.1f}" for name, values in results.items()), flush=True)
    medians = {name: statistics.median(values) for name, values in results.items()}
    names = list(medians)
    tower = medians[names[0]]
    import tensorflow as tf
    from towertrain.engine.process.settings import describe_pool
    print(f"\nmodel={FLAGS.model} variable_update={FLAGS.variable_update} "
          f"all_reduce={FLAGS.all_reduce_spec} steps={FLAGS.steps} rounds={FLAGS.rounds}")
    # One process, one pool, fixed by the first contender (towertrain's N towers).
    pool = describe_pool(tf.config.threading.get_intra_op_parallelism_threads())
    print(f"intra-op threads: {pool} for every contender")
    for name, value in medians.items():
        print(f"{name:<42} median images/sec {value:8.1f}")
    for other in names[1:]:
        # Paired per-round ratios are robust to the machine's drift between rounds.
        paired = statistics.median(a / b for a, b in zip(results[names[0]], results[other]))
        print(f"ratio {names[0]} / {other}: {tower / medians[other]:.2f}x of medians, "
              f"{paired:.2f}x median of per-round ratios")
    return 0


if __name__ == "__main__":
    sys.exit(app.run(main))
