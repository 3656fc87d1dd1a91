"""--graph_file, --benchmark_log_dir and --use_chrome_trace_format: the files a
run writes, read back."""
import json
import re

import tensorflow as tf
from google.protobuf import text_format

from towertrain import Params, Trainer, models


def test_graph_file_benchmark_log_and_raw_trace_are_written(tmp_path):
    lines = []
    params = Params(model="trivial", device="cpu", num_gpus=2, variable_update="replicated",
                    num_batches=4, num_warmup_batches=1, display_every=2,
                    graph_file=str(tmp_path / "step.pbtxt"),
                    benchmark_log_dir=str(tmp_path / "log"),
                    trace_file=str(tmp_path / "step.xspace.txt"),
                    use_chrome_trace_format=False)
    result = Trainer(params).train(write=lines.append)

    # The step's graph, text format: both towers and the exchange.
    graph = text_format.Parse((tmp_path / "step.pbtxt").read_text(), tf.compat.v1.GraphDef())
    names = {node.name.split("/")[0] for node in graph.node}
    assert {"tower_0", "tower_1"} <= names
    assert any(node.attr["_output_shapes"].list.shape for node in graph.node)  # add_shapes

    # metric.log: the step lines' images/sec, then the average (the total line's).
    metrics = [json.loads(line) for line in (tmp_path / "log" / "metric.log").open()]
    printed = {int(m.group(1)): float(m.group(2)) for m in
               (re.match(r"(\d+)\timages/sec: ([\d.]+)", line) for line in lines) if m}
    current = [m for m in metrics if m["name"] == "current_examples_per_sec"]
    assert {m["global_step"]: round(m["value"], 1) for m in current} == printed
    assert sorted(printed) == [2, 4]  # the first timed step, then every 2nd
    average = metrics[-1]
    assert average["name"] == "average_examples_per_sec"
    assert average["global_step"] == 5 and average["unit"] == "images/sec"
    assert abs(average["value"] - result.images_per_sec) < 1e-6 * result.images_per_sec

    run = json.loads((tmp_path / "log" / "benchmark_run.log").read_text())
    assert run["model_name"] == "trivial"
    assert run["tensorflow_version"]["version"] == tf.version.VERSION
    parameters = {p["name"]: p for p in run["run_parameters"]}
    assert parameters["num_gpus"] == {"name": "num_gpus", "long_value": 2}
    assert parameters["variable_update"]["string_value"] == "replicated"
    per_device = models.get_spec("trivial").default_batch_size
    assert parameters["batch_size_per_device"]["long_value"] == per_device
    assert parameters["batch_size"]["long_value"] == 2 * per_device

    # --nouse_chrome_trace_format: the profiler's XSpace, as text.
    from tensorflow.tsl.profiler.protobuf import xplane_pb2
    space = text_format.Parse((tmp_path / "step.xspace.txt").read_text(), xplane_pb2.XSpace())
    assert "/host:CPU" in [plane.name for plane in space.planes]


def test_graph_file_binary_unless_the_name_ends_in_txt(tmp_path):
    path = tmp_path / "step.pb"
    Trainer(Params(model="trivial", device="cpu", num_batches=1, num_warmup_batches=0,
                   graph_file=str(path))).train(write=lambda line: None)
    graph = tf.compat.v1.GraphDef.FromString(path.read_bytes())
    assert any(node.name.startswith("tower_0/") for node in graph.node)


def test_chrome_trace_format_flag_needs_a_trace_file():
    import pytest
    from towertrain.config import flags as flags_lib
    from towertrain.errors import ParamsError
    params = Params(model="trivial", use_chrome_trace_format=False)
    with pytest.raises(ParamsError, match=r"^--use_chrome_trace_format=False: only applies "
                                          r"with --trace_file"):
        flags_lib.check_command_line(params, {"use_chrome_trace_format"})
