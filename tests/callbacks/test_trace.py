"""--trace_file: a Chrome trace of one 2-device step with both devices' compute,
the copies between them and the all-reduce; --profile_steps: a TensorBoard
profile under the summary directory."""
import collections
import glob
import json
import os
import subprocess
import sys

import tensorflow as tf

from towertrain import Params, Trainer

from helpers import tiny_models  # noqa: F401 - registers ckpt_tiny

DEVICES = {"/device:CPU:0", "/device:CPU:1"}


def train(lines, **kw):
    settings = dict(model="ckpt_tiny", device="cpu", num_gpus=2, variable_update="replicated",
                    all_reduce_spec="pscpu", num_warmup_batches=2, num_batches=2,
                    display_every=100)
    trainer = Trainer(Params(**{**settings, **kw}))
    trainer.train(write=lines.append)
    trainer.close()
    return trainer


def load(path):
    with open(path) as f:
        trace = json.load(f)
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    ops = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] != "host"]
    return names, ops


def test_trace_of_a_two_device_step_shows_each_device_copies_and_all_reduce(tmp_path):
    path = str(tmp_path / "step.json")
    lines = []
    train(lines, trace_file=path)
    # Default: the first timed step, after the 2 warm-up steps.
    assert any(line.startswith(f"Wrote a trace of step 3 to {path}") for line in lines), lines
    names, ops = load(path)
    assert DEVICES <= set(names.values()), names
    kinds = collections.defaultdict(collections.Counter)
    for event in ops:
        device = names[event["pid"]]
        assert event["args"]["device"] == device  # every op is under the device that ran it
        kinds[device][event["cat"]] += 1
        if event["cat"] == "all-reduce":
            assert "allreduce" in event["args"]["node"].split("/")
    for device in DEVICES:
        # Each device ran its tower (convolutions, batch norm, their gradients),
        # sent or received tensors, and took part in the all-reduce (its split).
        assert kinds[device]["compute"] >= 20 and kinds[device]["copy"] >= 2, kinds
        assert kinds[device]["all-reduce"] >= 1, kinds
        mine = [e["args"] for e in ops if names[e["pid"]] == device]
        convs = {a["op"] for a in mine if "Conv2D" in a["op"]}  # oneDNN: _MklNative...
        assert any("Backprop" in op for op in convs) and any(
            "Backprop" not in op for op in convs), convs
        towers = {part for a in mine if a["op"] not in ("_Recv", "_Send")
                  for part in a["node"].split("/") if part.startswith("tower_")}
        assert towers == {f"tower_{device[-1]}"}, towers  # its own tower only
    assert not [e for e in ops if e["args"]["device"] not in DEVICES]
    # Copies: each _Send's rendezvous key leaves from the device it is drawn on.
    sends = [e for e in ops if e["args"]["op"] == "_Send"]
    assert sends and all(e["args"]["key"].split(";")[0].endswith(e["args"]["device"][1:])
                         for e in sends)


def test_trace_of_a_chosen_step(tmp_path):
    path = str(tmp_path / "chosen.json")
    lines = []
    train(lines, trace_file=path, trace_step=4)
    assert any(line.startswith(f"Wrote a trace of step 4 to {path}") for line in lines)
    names, ops = load(path)
    assert DEVICES <= set(names.values()) and ops


def test_profile_steps_write_a_tensorboard_profile_under_the_summary_dir(tmp_path):
    lines = []
    summary_dir, train_dir = tmp_path / "summaries", tmp_path / "train"
    train(lines, train_dir=str(train_dir), summary_dir=str(summary_dir), summary_verbosity=1,
          profile_steps="2,3")
    found = glob.glob(str(summary_dir / "plugins" / "profile" / "*" / "*.xplane.pb"))
    assert len(found) == 1 and os.path.getsize(found[0]) > 0, found
    assert not os.path.exists(train_dir / "plugins"), os.listdir(train_dir)
    assert any(line.startswith("Profiled steps 2..3 into") for line in lines), lines
    from tensorflow.tsl.profiler.protobuf import xplane_pb2
    space = xplane_pb2.XSpace()
    with open(found[0], "rb") as f:
        space.ParseFromString(f.read())
    ops = {meta.name for plane in space.planes for meta in plane.event_metadata.values()}
    assert any(name.startswith("tower_1/") and "Conv2D" in name for name in ops), sorted(ops)
    # The profiler was stopped: a new session starts.
    tf.profiler.experimental.start(str(tmp_path / "again"))
    tf.profiler.experimental.stop()


def test_the_cli_writes_summaries_and_the_trace(tmp_path):
    train_dir, path = tmp_path / "run", tmp_path / "traces" / "step.json"
    done = subprocess.run(
        [sys.executable, "-m", "towertrain", "--model=trivial", "--device=cpu", "--num_gpus=2",
         "--variable_update=replicated", "--batch_size=4", "--num_warmup_batches=1",
         "--num_batches=2", f"--train_dir={train_dir}", "--summary_verbosity=1",
         "--save_summaries_steps=1", f"--trace_file={path}"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"Wrote a trace of step 2 to {path}" in done.stdout, done.stdout
    names, ops = load(str(path))
    assert DEVICES <= set(names.values()) and ops
    events = glob.glob(str(train_dir / "events.out.tfevents.*"))
    assert len(events) == 1, os.listdir(train_dir)
    steps = {event.step for event in tf.compat.v1.train.summary_iterator(events[0])
             for value in event.summary.value if value.tag == "loss"}
    assert steps == {1, 2, 3}, steps
