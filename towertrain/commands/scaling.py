"""`python -m towertrain.scaling`: images/sec on 1..N devices for every variable-update mode.

    python -m towertrain.scaling --model=resnet20 --device=cpu --max_devices=4
        [--batch_size=32 --num_batches=20 --num_warmup_batches=5 --rounds=3
         --output_dir=scaling --modes=replicated/ring,keras_mirrored]

Trains on synthetic data in every configuration: each mode (parameter_server;
replicated with each all-reduce valid for the device type: pscpu and ring on
cpu, nccl, pscpu, psgpu and ring on gpu; independent; collective_all_reduce;
and Keras `fit` under
MirroredStrategy as the peer) on 1, 2, ..., N devices; collective_all_reduce
runs as one worker with N local devices. The batch per device
stays fixed (weak scaling, as tf_cnn_benchmarks reports): the global batch is
batch x devices. Every configuration is built and warmed up once, in this one
process, then timed in interleaved rounds (round r runs --num_batches steps of
each configuration in turn), so the machine's drift hits all alike.

Prints a table (median images/sec over the rounds; speed-up against 1 device
of the same mode; efficiency = speed-up / devices; spread = (max - min) /
median over the rounds) and writes into --output_dir scaling_MODEL_DEVICE.txt
(the table), .json and .csv (every round's images/sec of every
configuration) and .png (images/sec vs devices, a line per mode; needs
matplotlib: pip install 'towertrain[plot]').
"""
import dataclasses
import os
import statistics
import textwrap
import time
from typing import List, Optional

from absl import flags

from towertrain import models
from towertrain.commands import common, scaling_plot
from towertrain.commands.scaling_plot import KERAS_MODE
from towertrain.config import flags as flags_lib, machine, params as params_lib, settings
from towertrain.config.declare import take
from towertrain.engine.process import settings as process_settings
from towertrain.recipe.settings import Precision

# TensorFlow, Keras and the modules that import them are imported inside the
# functions that use them, after main's quiet import of TensorFlow: --help
# stays instant and TensorFlow's start-up lines stay hidden.

ALL_REDUCE_SPECS = {"cpu": ("pscpu", "ring"), "gpu": ("nccl", "pscpu", "psgpu", "ring")}
# Training flags the benchmark sets itself, per configuration, or never uses
# (it times steps on synthetic data): given explicitly, each is an error. Each
# setting says which it is (towertrain.config.settings).
SET_PER_CONFIGURATION = settings.for_scaling(settings.PER_CONFIGURATION)
NOT_USED = settings.for_scaling(settings.NOT_USED)
OWN_FLAGS = ("max_devices", "rounds", "output_dir", "modes", "keras_batch_norm")
def modes(device):
    """(name, variable_update, all_reduce_spec) of every mode timed on `device`."""
    return ([("parameter_server", "parameter_server", None)] +
            [(f"replicated/{spec}", "replicated", spec) for spec in ALL_REDUCE_SPECS[device]] +
            [("independent", "independent", None),
             ("collective_all_reduce", "collective_all_reduce", None),
             (KERAS_MODE, None, None)])


class TowertrainRunner:
    """A Trainer for `params`, warmed up; calling it times `steps` steps and
    returns images/sec (the examples the steps trained on over their wall time)."""

    def __init__(self, params, warmup_steps):
        from towertrain import Trainer
        self.trainer = Trainer(params)
        for _ in range(max(1, warmup_steps)):  # the first step traces the function
            self.trainer.step()

    def __call__(self, steps):
        examples = 0
        start = time.perf_counter()
        for _ in range(steps):
            examples += self.trainer.step().examples
        return examples / (time.perf_counter() - start)

    def close(self):
        self.trainer.close()


class MirroredRunner:
    """Keras `fit` under tf.distribute.MirroredStrategy on `devices`: the
    registry's model in `params`' data format and precision, the same batch
    per device, synthetic data, XLA if params.xla_compile. With
    stock_batch_norm the network is as a Keras user writes it
    (keras.layers.BatchNormalization), else it keeps towertrain's fused layer.

    Calling it times `steps` batches inside one fit call with a callback, so
    fit's per-call setup (distributing the dataset, callbacks) is not charged."""

    def __init__(self, params, devices, stock_batch_norm=True, warmup_steps=3):
        import keras
        import tensorflow as tf
        from towertrain.recipe import precision
        from towertrain.state.export import to_stock_keras
        strategy = tf.distribute.MirroredStrategy(list(devices))
        spec = models.get_spec(params.resolved_model)
        with strategy.scope(), precision.policy_scope(take(Precision, params)):
            model = models.build(
                params.resolved_model, data_format=params.resolved_data_format,
                num_classes=models.DATASET_CLASSES[params.data_name or spec.default_dataset])
            if stock_batch_norm:
                model = to_stock_keras(model)
            model.compile(optimizer=keras.optimizers.SGD(0.1),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                          jit_compile=params.xla_compile)
        self.model = model
        self.global_batch = len(devices) * (params.batch_size or spec.default_batch_size)
        images = tf.random.truncated_normal((self.global_batch,) + model.input_shape[1:])
        labels = tf.random.uniform((self.global_batch,), 0, model.output_shape[-1], tf.int32)
        self.dataset = tf.data.Dataset.from_tensors((images, labels)).repeat()
        self.model.fit(self.dataset, steps_per_epoch=max(1, warmup_steps), epochs=1, verbose=0,
                       shuffle=False)

        class StepClock(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                self.ends.append(time.perf_counter())
        self.clock = StepClock()

    def __call__(self, steps):
        self.clock.ends = []
        self.model.fit(self.dataset, steps_per_epoch=steps + 1, epochs=1, verbose=0,
                       shuffle=False, callbacks=[self.clock])
        # From the end of the first batch to the end of the last: `steps` batches.
        return steps * self.global_batch / (self.clock.ends[-1] - self.clock.ends[0])

    def close(self):
        pass


@dataclasses.dataclass
class Configuration:
    mode: str
    variable_update: Optional[str]  # None: the Keras peer
    all_reduce_spec: Optional[str]
    devices: int
    global_batch: int
    images_per_sec: List[float] = dataclasses.field(default_factory=list)
    runner: object = None

    @property
    def median(self):
        return statistics.median(self.images_per_sec)

    @property
    def spread(self):
        return (max(self.images_per_sec) - min(self.images_per_sec)) / self.median


def plan(base, max_devices, selected=None):
    """Every configuration, mode by mode, 1..max_devices devices each."""
    batch = base.batch_size
    return [Configuration(name, update, spec, n, batch * n)
            for name, update, spec in modes(base.resolved_device)
            if selected is None or name in selected
            for n in range(1, max_devices + 1)]


def _one_pool(base, device, max_devices):
    """`base` with the intra-op pool every configuration shares: one process
    times them all, and TensorFlow fixes its pool at its start. Unless
    --num_intra_threads says otherwise, on CPU devices the pool
    `python -m towertrain` gives --max_devices towers (cores / towers), so
    the multi-device rows are timed as the CLI runs them; a 1-device row then
    runs with that pool too (the table's header says which)."""
    if base.num_intra_threads is not None or device != "cpu":
        return base
    threads = process_settings.intra_op_threads(None, device, workers_on_host=1,
                                            cores=machine.available_cores(),
                                            towers=max_devices)
    return base if threads is None else base.replace(num_intra_threads=threads)


def build(config, base, keras_stock_batch_norm):
    """The configuration's runner, its step traced (one step run)."""
    if config.variable_update is None:
        device = base.resolved_device
        return MirroredRunner(base, [f"/{device}:{i}" for i in range(config.devices)],
                              keras_stock_batch_norm, warmup_steps=1)
    params = base.replace(num_gpus=config.devices, variable_update=config.variable_update,
                          all_reduce_spec=config.all_reduce_spec)
    return TowertrainRunner(params, warmup_steps=1)


def time_rounds(configs, rounds, steps, warmup_steps, write=print):
    """An untimed pass of `warmup_steps` (at least 1) over every configuration,
    then the rounds: round r times every configuration once, the order rotated
    by r. The warmup pass comes after all are built because a function's first
    call after other functions were traced pays a one-time cost (measured here:
    70-200 ms for a 1 ms step), which would otherwise land in round 1."""
    for config in configs:
        config.runner(max(1, warmup_steps))
    for r in range(rounds):
        started = time.perf_counter()
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for config in order:
            config.images_per_sec.append(config.runner(steps))
        write(f"round {r + 1}/{rounds}: {time.perf_counter() - started:.0f} s")


def _flag_checks(params_lib, explicit):
    """The scaling command's own flag errors (ParamsError naming the flag)."""
    fl = flags.FLAGS
    for name in sorted(explicit):
        if name in SET_PER_CONFIGURATION:
            raise params_lib.ParamsError(
                f"--{name}={fl[name].value}: set per configuration by the scaling benchmark"
                + ("; use --max_devices" if name == "num_gpus" else "; use --modes"))
        if name in NOT_USED:
            raise params_lib.ParamsError(
                f"--{name}={fl[name].value}: not used by the scaling benchmark (it times "
                "training steps on synthetic data)")
    for name in ("max_devices", "rounds"):
        if fl[name].value is not None and fl[name].value < 1:
            raise params_lib.ParamsError(f"--{name}={fl[name].value}: must be >= 1")


def _explicit_settings(flag_values):
    """Every setting given on the command line, the command-line-only ones
    (--forward_only, --verbose) included: flags_lib.explicit_flags() lists
    Params fields only, so a command-line-only flag would pass unseen."""
    return {s.name for s in settings.SETTINGS
            if s.name in flag_values and flag_values[s.name].present}


def _devices(device, max_devices, devices):
    """(device type, max devices); makes the logical CPU devices before any op runs."""
    gpus = devices.num_physical_gpus()
    device = device or ("gpu" if gpus else "cpu")
    if device == "cpu":
        max_devices = max_devices or 4
        devices.ensure_logical_cpus(max_devices)
    elif not gpus:
        raise devices.DeviceError(f"--device=gpu: no GPU present"
                                  f"{devices.no_gpu_note()}; use "
                                  "--device=cpu (logical CPU devices)")
    elif (max_devices or gpus) > gpus:
        raise devices.DeviceError(f"--max_devices={max_devices}: only {gpus} GPU(s) present")
    return device, max_devices or gpus


def main(argv):
    if len(argv) > 1:
        return common.fail(f"unexpected arguments {argv[1:]}; flags take the form --name=value")
    try:
        _flag_checks(params_lib, _explicit_settings(flags.FLAGS))
    except params_lib.ParamsError as err:
        return common.fail(str(err))
    common.import_tensorflow_quietly()
    import tensorflow as tf
    from towertrain.engine.process import devices
    fl = flags.FLAGS
    if not fl.verbose:  # many Trainers in one process: TensorFlow warns of retracing
        tf.get_logger().setLevel("ERROR")
    try:
        device, max_devices = _devices(fl.device, fl.max_devices, devices)
        base = flags_lib.params_from_flags().replace(device=device)
        base = base.replace(batch_size=base.batch_size or
                            models.get_spec(base.resolved_model).default_batch_size)
        base = _one_pool(base, device, max_devices)
        names = [name for name, _, _ in modes(device)]
        selected = fl.modes.split(",") if fl.modes else None
        for name in selected or ():
            if name not in names:
                raise params_lib.ParamsError(f"--modes={fl.modes}: unknown mode {name!r}; "
                                             f"on {device}: {', '.join(names)}")
        configs = plan(base, max_devices, selected)
        print(f"building {len(configs)} configurations...", flush=True)
        for config in configs:
            config.runner = build(config, base, fl.keras_batch_norm == "stock")
    except (params_lib.ParamsError, devices.DeviceError) as err:
        return common.fail(str(err))
    time_rounds(configs, fl.rounds, base.resolved_num_batches, base.num_warmup_batches,
                write=lambda line: print(line, flush=True))
    for config in configs:
        config.runner.close()
    settings = {"model": base.resolved_model, "device": device, "data_format": base.resolved_data_format,
                "batch_size": base.batch_size, "num_batches": base.resolved_num_batches,
                "num_warmup_batches": base.num_warmup_batches, "rounds": fl.rounds,
                "max_devices": max_devices, "keras_batch_norm": fl.keras_batch_norm,
                "tensorflow": tf.__version__,
                "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads()}
    os.makedirs(fl.output_dir, exist_ok=True)
    stem = os.path.join(fl.output_dir, f"scaling_{base.resolved_model}_{device}")
    lines = scaling_plot.table_lines(configs, settings)
    print("\n" + "\n".join(lines))
    with open(stem + ".txt", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    scaling_plot.write_data(configs, settings, stem)
    print(f"\nwrote {stem}.txt, {stem}.json, {stem}.csv")
    if scaling_plot.write_plot(stem + ".png", configs, settings):
        print(f"wrote {stem}.png")
    else:
        print(f"no plot: matplotlib is not installed; pip install 'towertrain[plot]' "
              f"(or pip install matplotlib) and run again for {stem}.png")
    return 0


def define_flags():
    flags_lib.define_flags()
    flags.DEFINE_integer("max_devices", None, "Time 1..this many devices (default: the "
                         "GPUs present with --device=gpu, 4 logical CPU devices with cpu).")
    flags.DEFINE_integer("rounds", 3, "Interleaved rounds: each times every configuration "
                         "once for --num_batches steps.")
    flags.DEFINE_string("output_dir", "scaling", "Where the table, the plot and the raw "
                        "numbers (JSON, CSV) go.")
    flags.DEFINE_string("modes", None, "Comma-separated modes to time (default: all): "
                        "parameter_server, replicated/SPEC (SPEC: pscpu, ring; on gpu also "
                        f"nccl, psgpu), independent, collective_all_reduce (one worker), "
                        f"{KERAS_MODE}.")
    flags.DEFINE_enum("keras_batch_norm", "stock", ["stock", "fused"], f"{KERAS_MODE}: the "
                      "network as a Keras user writes it (keras.layers.BatchNormalization), "
                      "or with towertrain's fused batch-norm layer.")


def help_text():
    usage = __doc__.split("\n\n")[1]
    shared = settings.for_scaling(settings.SHARED)
    # Command-line-only flags (--verbose) close the list on lines of their own.
    fields = [s.name for s in settings.params_settings() if s.name in shared]
    lines = ["usage:", usage, "", "Scaling flags:"]
    for name in OWN_FLAGS:
        lines += common.flag_help(flags.FLAGS[name], 80)
    lines += ["", "Run flags shared with training (python -m towertrain --help explains "
              "them):", textwrap.fill(", ".join(f"--{name}" for name in fields), 80,
                                      initial_indent="  ", subsequent_indent="  ")]
    lines += [f"  --{name}" for name in shared if name not in fields]
    return "\n".join(lines) + "\n"


def run():
    define_flags()
    common.run_app(main, common.flags_parser(help_text), "towertrain.scaling")


if __name__ == "__main__":
    run()
