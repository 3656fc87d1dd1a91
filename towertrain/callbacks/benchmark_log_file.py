"""--benchmark_log_dir: machine-readable results, in the files and JSON layout
of the TensorFlow model garden's BenchmarkFileLogger, which tf_cnn_benchmarks
wrote them with:

    benchmark_run.log  one JSON object: model_name, dataset, run_date,
                       tensorflow_version, machine_config, run_parameters
                       (every setting, as {"name", "<type>_value"})
    metric.log         one JSON object a line: name, value, unit, global_step,
                       timestamp, extras. current_examples_per_sec at each step
                       line, average_examples_per_sec at the end.
"""
import datetime
import json
import multiprocessing
import os
import platform

import tensorflow as tf

from towertrain.engine.run import benchmark_log

from .step_printer import StepPrinter

RUN_LOG = "benchmark_run.log"
METRIC_LOG = "metric.log"
DATE_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(DATE_FORMAT)


def run_parameter(name, value):
    """The model garden's typed parameter entry."""
    if isinstance(value, bool):
        return {"name": name, "bool_value": str(value)}
    if isinstance(value, int):
        return {"name": name, "long_value": value}
    if isinstance(value, float):
        return {"name": name, "float_value": value}
    return {"name": name, "string_value": str(value)}


class BenchmarkLogFile(StepPrinter):
    """Logs the step lines' images/sec (the same numbers StepPrinter prints)
    and the run's description under `log_dir`: model_name, dataset, the tower
    devices and `parameters` (every setting by flag name, as run_parameters)."""

    def __init__(self, log_dir, display, num_warmup_batches, model_name, dataset,
                 devices, parameters):
        super().__init__(display, num_warmup_batches, write=lambda line: None)
        self.log_dir = log_dir
        self.model_name = model_name
        self.dataset = dataset
        self.devices = list(devices)
        self.parameters = dict(parameters)

    def before_train(self, loop):
        super().before_train(loop)
        os.makedirs(self.log_dir, exist_ok=True)
        info = {"model_name": self.model_name,
                "dataset": {"name": self.dataset},
                "run_date": _now(),
                "tensorflow_version": {"version": tf.version.VERSION,
                                       "git_hash": tf.version.GIT_VERSION},
                "machine_config": {"cpu_info": {"num_cores": multiprocessing.cpu_count(),
                                                "cpu_info": platform.processor()},
                                   "devices": self.devices},
                "run_parameters": [run_parameter(name, value) for name, value
                                   in sorted(self.parameters.items()) if value is not None]}
        with open(os.path.join(self.log_dir, RUN_LOG), "w") as f:
            json.dump(info, f)
        # A new run's metrics replace an earlier run's in the same directory.
        open(os.path.join(self.log_dir, METRIC_LOG), "w").close()

    def log_metric(self, name, value, unit=None, global_step=None):
        entry = {"name": name, "value": float(value), "unit": unit,
                 "global_step": global_step, "timestamp": _now(), "extras": []}
        with open(os.path.join(self.log_dir, METRIC_LOG), "a") as f:
            f.write(json.dumps(entry) + "\n")

    def after_step(self, step, result, seconds):
        timed_before = len(self.times)
        super().after_step(step, result, seconds)
        timed = len(self.times)
        if timed > timed_before and self.display.is_display_step(step, timed):
            speeds = [n / t for n, t in zip(self.times.examples, self.times.seconds)]
            mean, _, _ = benchmark_log.speed_stats(speeds)  # the step line's number
            self.log_metric("current_examples_per_sec", mean, "images/sec", step)

    def after_train(self):
        if self.times:
            self.log_metric("average_examples_per_sec", self.times.total_images_per_sec(),
                            "images/sec", self.loop.step)
