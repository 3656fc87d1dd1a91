"""bench/kernel_counts.py reads both programs' traces alike: the op events of
each device process (towertrain's '/device:CPU:N', tf_cnn_benchmarks'
'<device> Compute'), Send/Recv and every other process left aside."""
from helpers import bench_scripts

kernel_counts = bench_scripts.load("kernel_counts")


def _trace(processes, ops):
    """processes: {pid: name}; ops: [(pid, op type, node)] as 'X' events."""
    events = [{"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}}
              for pid, name in processes.items()]
    events += [{"ph": "X", "pid": pid, "name": op, "ts": 0, "dur": 1,
                "args": {"op": op, "node": node}} for pid, op, node in ops]
    events.append({"ph": "C", "pid": 0, "name": "memory", "args": {"op": "Mul"}})
    return {"traceEvents": events}


def test_towertrain_and_tfcnn_traces_count_per_device_without_send_recv():
    towertrain = _trace({1: "/device:CPU:0", 2: "/device:CPU:1", 3: "host (python)"},
                        [(1, "Mul", "cond/a"), (1, "Mul", "cond/b"), (1, "_Send", "x"),
                         (2, "ReadVariableOp", "tower_1/Identity_3/ReadVariableOp"),
                         (2, "_HostRecv", "y"), (3, "Mul", "python step")])
    tfcnn = _trace({1: "/job:localhost/replica:0/task:0/device:CPU:0 Compute",
                    2: "/job:localhost/replica:0/task:0/device:CPU:0 Tensors",
                    4: "/job:localhost/replica:0/task:0/device:CPU:1 Compute"},
                   [(1, "ApplyMomentum", "v0"), (2, "Mul", "t"), (4, "_Recv", "r"),
                    (4, "ApplyMomentum", "v1"), (4, "Mul", "m")])
    tt_counts = kernel_counts.kernel_counts(towertrain)
    tf_counts = kernel_counts.kernel_counts(tfcnn)
    assert tt_counts == {"CPU:0": {"Mul": 2}, "CPU:1": {"ReadVariableOp": 1}}
    assert tf_counts == {"CPU:0": {"ApplyMomentum": 1}, "CPU:1": {"ApplyMomentum": 1, "Mul": 1}}
    assert kernel_counts.per_device(tt_counts) == (1.5, {"Mul": 1.0, "ReadVariableOp": 0.5})
    lines = []
    assert kernel_counts.report(tt_counts, tf_counts, lines.append) == 1.0
    assert lines[2] == "towertrain / tf_cnn_benchmarks: 1.000"
    assert lines[-3:] == ["| Mul | 1 | 0.5 | +0.5 |", "| ReadVariableOp | 0.5 | 0 | +0.5 |",
                          "| ApplyMomentum | 0 | 1 | -1 |"]
    assert kernel_counts.scope_counts(towertrain) == {"cond": 1.0, "tower_*": 0.5}
