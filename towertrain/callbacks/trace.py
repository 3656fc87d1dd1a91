"""--trace_file: a Chrome/Perfetto trace (JSON) of one training step.

How it is made, without TensorBoard's profile plugin:

1. TensorFlow's profiler (tf.profiler.experimental.start/stop) records the
   step into an XSpace (a `.xplane.pb` file, in a temporary folder). On a GPU
   the XSpace has a plane per GPU (kernels, memcpy streams); on CPU devices
   every op runs on host threads, named "<node>:<op type>".
2. Which device ran each node: the function runtime's partition graphs (one
   per device, after placement, grappler and control-flow lowering), collected
   with `context.enable_graph_collection()` from the start of the run, since
   TensorFlow records them only when it first runs a function. `_Send`s also
   name their source device in their rendezvous key. (TF2's
   `enable_run_metadata` step stats stay empty for tf.function steps:
   measured, TF 2.21.)
3. The JSON has one process per device with its ops in lanes by kind:
   `compute`, `copy` (_Send/_Recv, memcpy) and `all-reduce` (the ops of the
   gradient exchange: scopes `allreduce`, `aggregate`, `collective_allreduce`,
   NCCL and collective ops), plus the host thread that called the step. Each
   op's args name its node, op type and device. Open it in
   https://ui.perfetto.dev or chrome://tracing.
"""
import glob
import json
import os
import shutil
import tempfile

import tensorflow as tf
from towertrain.plan.steps import warmup_of_run
from towertrain.private_api import eager_context

from .base import Callback

ALL_REDUCE_SCOPES = ("allreduce", "aggregate", "collective_allreduce")
ALL_REDUCE_OPS = ("NcclAllReduce", "CollectiveReduce", "CollectiveReduceV2",
                  "CollectiveGather", "CollectiveGatherV2", "CollectiveBcastSend",
                  "CollectiveBcastRecv")
COPY_OPS = ("_Send", "_Recv", "_HostSend", "_HostRecv", "Copy", "CopyHost")
HOST_PLANE = "/host:CPU"
HOST_THREAD = "python"  # the thread that called the step


def kind_of(node, op_type):
    """'copy', 'all-reduce' or 'compute'."""
    if op_type in COPY_OPS or op_type.startswith("Memcpy"):
        return "copy"
    if op_type in ALL_REDUCE_OPS or any(part in ALL_REDUCE_SCOPES
                                        for part in node.split("/")):
        return "all-reduce"
    return "compute"


def short_device(name):
    """'/job:localhost/replica:0/task:0/device:CPU:1' -> '/device:CPU:1'."""
    return name[name.index("/device:"):] if "/device:" in name else name


class GraphCollection:
    """Collects the partition graphs of the functions TensorFlow instantiates
    while on, and maps their nodes to devices."""

    def __init__(self):
        self.devices = {}  # node name -> device
        self.on = False

    def start(self):
        eager_context().enable_graph_collection()
        self.on = True

    def stop(self):
        if self.on:
            metadata = eager_context().export_run_metadata()
            eager_context().disable_graph_collection()
            self.on = False
            self.devices.update({node.name: short_device(node.device)
                                 for function in getattr(metadata, "function_graphs", [])
                                 for graph in function.partition_graphs
                                 for node in graph.node})
        return self.devices


def _stats(plane, event):
    """An XEvent's stats (its metadata's too), by name."""
    names = {key: meta.name for key, meta in plane.stat_metadata.items()}
    out = {}
    for stat in [*plane.event_metadata[event.metadata_id].stats, *event.stats]:
        kind = stat.WhichOneof("value")
        if kind and kind != "bytes_value":
            value = getattr(stat, kind)
            out[names.get(stat.metadata_id, "?")] = (names.get(value, value)
                                                     if kind == "ref_value" else value)
    return out


def _host_op(plane, event):
    """(node, op type, stats) of a TF op event on a host thread, else None."""
    meta = plane.event_metadata[event.metadata_id]
    stats = _stats(plane, event)
    if meta.display_name and meta.name.endswith(":" + meta.display_name):
        return meta.name[:-len(meta.display_name) - 1], meta.display_name, stats
    if meta.name == "ExecutorState::ProcessAsync::Start" and "kernel_type" in stats:
        return str(stats.get("name", "?")), str(stats["kernel_type"]), stats  # a _Recv
    return None


class _TraceBuilder:
    """Chrome trace events: a process per device, lanes per kind of op."""

    def __init__(self):
        self.events, self.pids, self.lane_ends, self.unplaced = [], {}, {}, 0

    def pid(self, name):
        if name not in self.pids:
            pid = self.pids[name] = len(self.pids) + 1
            self.events += [{"ph": "M", "name": "process_name", "pid": pid,
                             "args": {"name": name}},
                            {"ph": "M", "name": "process_sort_index", "pid": pid,
                             "args": {"sort_index": pid}}]
        return self.pids[name]

    def add(self, process, kind, name, start_ps, duration_ps, args, tid=None):
        """One op; without `tid` it goes to the first lane of its kind free at its start."""
        pid, start, end = self.pid(process), start_ps / 1e6, (start_ps + duration_ps) / 1e6
        if tid is None:
            ends = self.lane_ends.setdefault((pid, kind), [])
            lane = next((i for i, last in enumerate(ends) if last <= start), len(ends))
            ends[lane:lane + 1] = [end]
            tid = f"{kind} #{lane}"
        self.events.append({"ph": "X", "pid": pid, "tid": tid, "name": name, "cat": kind,
                            "ts": start, "dur": max(end - start, 1e-6), "args": args})

    def host_plane(self, plane, node_devices):
        for line in plane.lines:
            for event in line.events:
                start = line.timestamp_ns * 1000 + event.offset_ps
                if line.name == HOST_THREAD:  # the step's call, nested: one track
                    self.add("host (python)", "host", plane.event_metadata[
                        event.metadata_id].name, start, event.duration_ps, {}, tid="python")
                    continue
                op = _host_op(plane, event)
                if op is None:
                    continue
                node, op_type, stats = op
                device = node_devices.get(node)
                if device is None and "key" in stats:  # a rendezvous key: src;..;dst
                    device = short_device(str(stats["key"]).split(";")[0])
                if device is None:
                    self.unplaced += 1
                    device = "unplaced (host threads)"
                args = {"node": node, "op": op_type, "device": device, "thread": line.name}
                args.update({k: str(v) for k, v in stats.items() if k in ("from", "to", "key")})
                self.add(device, kind_of(node, op_type), op_type, start, event.duration_ps,
                         args)

    def device_plane(self, plane):
        """A GPU's kernels and memcpys by stream (not verifiable on this CPU machine)."""
        for line in plane.lines:
            for event in line.events:
                meta = plane.event_metadata[event.metadata_id]
                node = str(_stats(plane, event).get("tf_op", meta.name)).split(":")[0]
                name = meta.display_name or meta.name
                kind = "copy" if "memcpy" in line.name.lower() else kind_of(node, name)
                self.add(f"{plane.name} streams", kind, name,
                         line.timestamp_ns * 1000 + event.offset_ps, event.duration_ps,
                         {"node": node, "device": plane.name, "stream": line.name})

    def trace(self, step):
        origin = min((e["ts"] for e in self.events if "ts" in e), default=0.0)
        for event in self.events:
            if "ts" in event:
                event["ts"], event["dur"] = round(event["ts"] - origin, 3), round(event["dur"], 3)
        return {"traceEvents": self.events, "displayTimeUnit": "ms",
                "otherData": {"step": step, "unplaced_events": self.unplaced}}


def chrome_trace(space, node_devices, step=None):
    """A Chrome trace-event dict of an XSpace: one process per device."""
    builder = _TraceBuilder()
    for plane in space.planes:
        if plane.name == HOST_PLANE:
            builder.host_plane(plane, node_devices)
        elif plane.name.startswith("/device:"):
            builder.device_plane(plane)
    return builder.trace(step)


def read_xspace(logdir):
    """The XSpace the profiler wrote under `logdir` (plugins/profile/<run>/)."""
    paths = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    if not paths:
        raise RuntimeError(f"the profiler wrote no .xplane.pb under {logdir}")
    # TensorFlow's own proto; deferred: only reading a trace back (tests, tools) needs it.
    from tensorflow.tsl.profiler.protobuf import xplane_pb2
    space = xplane_pb2.XSpace()
    with open(max(paths, key=os.path.getmtime), "rb") as f:
        space.ParseFromString(f.read())
    return space


class StepTrace(Callback):
    """Writes a Chrome/Perfetto trace of global step `step` (default: the
    first timed step, after the warm-up) to `path`; chrome=False writes the
    profiler's raw XSpace proto there instead, in text format."""

    def __init__(self, path, step=None, num_warmup_batches=0, write=print, chrome=True):
        self.path = path
        self.chrome = chrome  # False: the raw XSpace proto, text format (--use_chrome_trace_format)
        self.requested_step = step
        self.num_warmup_batches = num_warmup_batches
        self.write = write
        self.step = None
        self.graphs = GraphCollection()
        self._logdir = None

    def header_info(self):
        which = (f"step {self.requested_step}" if self.requested_step
                 else "the first timed step")
        return [("Trace", f"{which} -> {self.path}")]

    def before_train(self, loop):
        super().before_train(loop)
        warmup = warmup_of_run(self.num_warmup_batches, loop.start_step, loop.total_steps)
        self.step = self.requested_step or loop.start_step + warmup + 1
        if not loop.start_step < self.step <= loop.total_steps:
            self.write(f"--trace_step={self.step}: not among this run's steps "
                       f"({loop.start_step + 1}..{loop.total_steps}); no trace written")
            self.step = None
            return
        # On before the first step: partition graphs are recorded on first run only.
        self.graphs.start()

    def before_step(self, step):
        if step != self.step:
            return
        logdir = tempfile.mkdtemp(prefix="towertrain_trace_")
        try:
            tf.profiler.experimental.start(logdir)
        except tf.errors.AlreadyExistsError:  # --profile_steps is profiling this step
            shutil.rmtree(logdir, ignore_errors=True)
            self.graphs.stop()
            self.write(f"--trace_file: step {step} is inside --profile_steps (one profiler "
                       "at a time); no trace written")
            return
        self._logdir = logdir

    def after_step(self, step, result, seconds):
        if step != self.step or self._logdir is None:
            return
        tf.profiler.experimental.stop()
        try:
            space = read_xspace(self._logdir)
            trace = chrome_trace(space, self.graphs.stop(), step) if self.chrome else None
        finally:
            shutil.rmtree(self._logdir, ignore_errors=True)
            self._logdir = None
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        if trace is None:  # as tf_cnn_benchmarks' raw StepStats: the proto as text
            with open(self.path, "w") as f:
                f.write(str(space))
            self.write(f"Wrote the raw profile (XSpace, text format) of step {step} to "
                       f"{self.path}")
            return
        with open(self.path, "w") as f:
            json.dump(trace, f)
        devices = sorted(e["args"]["name"] for e in trace["traceEvents"]
                         if e.get("name") == "process_name")
        unplaced = trace["otherData"]["unplaced_events"]
        self.write(f"Wrote a trace of step {step} to {self.path} ({', '.join(devices)})"
                   + (f"; {unplaced} ops of unknown device (the step's function ran before "
                      "this run began collecting its graphs)" if unplaced else "")
                   + "; open it in https://ui.perfetto.dev")

    def close(self):
        if self._logdir is not None:  # the traced step failed
            tf.profiler.experimental.stop()
            shutil.rmtree(self._logdir, ignore_errors=True)
            self._logdir = None
        self.graphs.stop()
