"""bench/bench_slow_link.py's pure parts: its arguments, the exposed
fraction's arithmetic, the commands it would run. No namespace is created."""
import pytest

from helpers import bench_scripts

slow_link = bench_scripts.load("bench_slow_link")


def test_rates_parse_per_model_and_bad_ones_are_named():
    args = slow_link.parse_args(["--rates=resnet20=10,20", "--rates=alexnet_cifar=5,15.5"])
    assert args.rates == {"resnet20": (10.0, 20.0), "alexnet_cifar": (5.0, 15.5)}
    assert args.rounds == 5 and not args.contention  # 5 rounds at least, by default
    assert slow_link.parse_args(["--contention"]).contention
    assert slow_link.parse_args([]).rates == slow_link.parse_rates(slow_link.DEFAULT_RATES)
    for bad, words in [("resnet20=10", "two rates"), ("resnet20=10,x", "numbers"),
                       ("resnet20", "MODEL=RATE,RATE"), ("resnet20=0,10", "two rates > 0")]:
        with pytest.raises(ValueError, match=words):
            slow_link.parse_rates([bad])
    with pytest.raises(SystemExit):
        slow_link.parse_args(["--rounds=0"])


def test_exposed_fraction_and_step_time():
    # t_indep 100 ms, one pack 400 ms: 16 packs at 160 ms leave 60 of 300 ms exposed.
    assert slow_link.exposed_fraction(0.160, 0.100, 0.400) == pytest.approx(0.2)
    assert slow_link.exposed_fraction(0.400, 0.100, 0.400) == pytest.approx(1.0)
    assert slow_link.exposed_fraction(0.090, 0.100, 0.400) == pytest.approx(-1 / 30)
    assert slow_link.exposed_fraction(0.2, 0.1, 0.1) is None  # one pack costs nothing
    # A chief's 160 images/sec over 2 workers of 32: each worker's step is 0.4 s.
    assert slow_link.step_time(160.0, 32, 2) == pytest.approx(0.4)
    assert slow_link.summary([3.0, 1.0, 2.0, 5.0, 4.0]) == (3.0, 1.0, 5.0)


def test_the_commands_it_runs():
    assert slow_link.tbf_command("ttsl0", "ttsl-a", 20.0) == [
        "ip", "netns", "exec", "ttsl0", "tc", "qdisc", "replace", "dev", "ttsl-a", "root",
        "tbf", "rate", "20mbit", "burst", "64kb", "latency", "400ms"]
    labels = dict(slow_link.exchanges(0.25))
    assert list(labels) == ["t_1", "t_4", "t_16", "t_bytes"]
    assert labels["t_16"][-1] == "--gradient_repacking=16"
    assert labels["t_bytes"][-1] == "--gradient_pack_mb=0.25"
    worker = slow_link.worker_command("resnet20", labels["t_1"], 1, 4, 1, cluster=True)
    assert worker[1:3] == ["-m", "towertrain"]
    assert "--worker_hosts=10.77.0.1:7777,10.77.0.2:7777" in worker
    assert "--task_index=1" in worker and "--num_gpus=1" in worker
    # Horovod's shape on 2 devices per worker.
    args = slow_link.parse_args(["--all_reduce_spec=scatter/xring", "--devices_per_worker=2"])
    flags = dict(slow_link.exchanges(0.25, args.specs))["t_1"]
    assert "--all_reduce_spec=scatter/xring" in flags
    assert "--num_gpus=2" in slow_link.worker_command("resnet20", flags, 0, 4, 1, True,
                                                      args.devices_per_worker)
    with pytest.raises(SystemExit):
        slow_link.parse_args(["--all_reduce_spec=nccl/xring"])
    alone = slow_link.worker_command("resnet20", ["--variable_update=independent"], 0, 4, 1,
                                     cluster=False)
    assert not any(a.startswith("--worker_hosts") for a in alone)


def test_several_specs_interleave_and_are_compared_round_by_round():
    args = slow_link.parse_args(["--all_reduce_spec=pscpu/xring,scatter/xring",
                                 "--packings=t_bytes", "--devices_per_worker=2"])
    assert args.specs == ("pscpu/xring", "scatter/xring")
    assert args.packings == ("t_1", "t_bytes")  # t_1 always: fractions divide by it
    runs = slow_link.exchanges(0.25, args.specs, args.packings)
    assert [label for label, _ in runs] == ["t_1 pscpu/xring", "t_1 scatter/xring",
                                            "t_bytes pscpu/xring", "t_bytes scatter/xring"]
    assert runs[3][1][-2:] == ["--all_reduce_spec=scatter/xring", "--gradient_pack_mb=0.25"]
    assert slow_link._one_pack_label("t_bytes scatter/xring") == "t_1 scatter/xring"
    assert slow_link._one_pack_label("t_16") == "t_1"
    assert slow_link.spec_ratios([2.0, 3.0], [1.0, 6.0]) == [2.0, 0.5]
    for bad in ["--all_reduce_spec=pscpu/xring,nccl/xring", "--all_reduce_spec=ring,ring",
                "--packings=t_2"]:
        with pytest.raises(SystemExit):
            slow_link.parse_args([bad])


def test_report_prints_each_spec_and_the_ratio(capsys):
    args = slow_link.parse_args(["--all_reduce_spec=pscpu/xring,scatter/xring",
                                 "--packings=t_1", "--rates=resnet20=10,20", "--rounds=2"])
    table = {("resnet20", None, "t_indep"): [0.1, 0.1]}
    sent, packs = {}, {}
    for rate in (10.0, 20.0):
        table[("resnet20", rate, "t_1 pscpu/xring")] = [0.5, 0.6]
        table[("resnet20", rate, "t_1 scatter/xring")] = [0.25, 0.6]
        for label in ("t_1 pscpu/xring", "t_1 scatter/xring"):
            sent[("resnet20", rate, label)] = [1.1e6, 1.2e6]
    slow_link.report(table, sent, packs, args.rates, args)
    out = capsys.readouterr().out
    assert "| 10 Mbit/s | t_1 scatter/xring | 425 (250-600) | 1.00 | 1.15 |" in out
    assert "| 10 Mbit/s | (t_1 - t_indep) / t_indep pscpu/xring | 4.5 | | |" in out
    # per-round ratios 2.0 and 1.0: median 1.5
    assert "| 20 Mbit/s | t_1: pscpu/xring / scatter/xring step time, per-round ratios | " \
           "1.50 (1.00-2.00) | | |" in out


def test_each_exchange_is_timed_in_each_wire_precision_and_the_bytes_compared(capsys):
    args = slow_link.parse_args(["--wire=float16", "--packings=t_1",
                                 "--rates=resnet20=10,20", "--rounds=1"])
    assert args.wires == ("float32", "float16")
    runs = dict(slow_link.exchanges(0.25, args.specs, args.packings, args.wires))
    assert list(runs) == ["t_1", "t_1 float16"]
    assert runs["t_1 float16"][-2:] == ["--compact_gradient_transfer",
                                        "--compact_transfer_dtype=float16"]
    assert not any("compact" in flag for flag in runs["t_1"])
    table = {("resnet20", None, "t_indep"): [0.1]}
    sent = {}
    for rate in (10.0, 20.0):
        table[("resnet20", rate, "t_1")] = [0.8]
        table[("resnet20", rate, "t_1 float16")] = [0.5]
        sent[("resnet20", rate, "t_1")] = [2.0e6]
        sent[("resnet20", rate, "t_1 float16")] = [1.1e6]
    slow_link.report(table, sent, {}, args.rates, args)
    out = capsys.readouterr().out
    assert "| 10 Mbit/s | t_1 float16 / t_1 | step time 0.62 | | bytes 0.55 |" in out
    with pytest.raises(SystemExit):
        slow_link.parse_args(["--wire=float8"])
    with pytest.raises(SystemExit):  # spec ratios compare float32 runs
        slow_link.parse_args(["--wire=float16", "--all_reduce_spec=pscpu/xring,collective"])
