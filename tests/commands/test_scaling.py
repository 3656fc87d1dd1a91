"""python -m towertrain.scaling: a row per configuration, the raw numbers, the plot,
and one-line errors. Tiny runs (trivial model, 2 devices, 2 steps)."""
import csv
import json
import os
import re
import subprocess
import sys

import pytest

from helpers.cli import run_cases

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/<wing>/this file
CPU_MODES = ["parameter_server", "replicated/pscpu", "replicated/ring", "independent",
             "collective_all_reduce", "keras_mirrored"]
EXPECTED = {(mode, n) for mode in CPU_MODES for n in (1, 2)}  # cpu, --max_devices=2
TINY = ["--model=trivial", "--device=cpu", "--batch_size=4", "--num_batches=2",
        "--num_warmup_batches=1"]
ROW = re.compile(r"^(\S+) +(\d+) +(\d+) +(\d+\.\d) +(\d+\.\d\d)x +(\d+\.\d)% +(\d+\.\d)%$")
NOTE = "no plot: matplotlib is not installed; pip install 'towertrain[plot]'"
try:
    import matplotlib.image  # noqa: F401
    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False


def run_scaling(*flags, cwd, env_extra=None, timeout=300):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # as a user
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [(env_extra or {}).get("PYTHONPATH"),
                                                      ROOT, env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "towertrain.scaling", *flags], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One run of every cpu mode on 1 and 2 devices, 2 rounds, output in ./scaling."""
    cwd = tmp_path_factory.mktemp("scaling")
    done = run_scaling(*TINY, "--max_devices=2", "--rounds=2", cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return done, os.path.join(cwd, "scaling", "scaling_trivial_cpu")


def table_rows(text):
    return {(m.group(1), int(m.group(2))): m for m in map(ROW.match, text.splitlines()) if m}


def test_table_has_exactly_a_row_per_configuration(tiny_run):
    done, stem = tiny_run
    rows = table_rows(done.stdout)
    assert set(rows) == EXPECTED
    assert "weak scaling: batch per device fixed at 4, global batch = 4 x devices" in done.stdout
    assert re.search(r"^intra-op threads: \d+ for every configuration", done.stdout,
                     re.MULTILINE), done.stdout
    for (mode, n), row in rows.items():
        assert int(row.group(3)) == 4 * n  # global batch
        speedup, efficiency = float(row.group(5)), float(row.group(6))
        if n == 1:
            assert speedup == 1.0 and efficiency == 100.0
        assert efficiency == pytest.approx(100 * speedup / n, abs=0.6)
    with open(stem + ".txt", encoding="utf-8") as f:
        assert set(table_rows(f.read())) == EXPECTED


def test_json_and_csv_hold_every_configuration_and_round(tiny_run):
    _, stem = tiny_run
    with open(stem + ".json", encoding="utf-8") as f:
        data = json.load(f)
    assert data["settings"]["rounds"] == 2 and data["settings"]["batch_size"] == 4
    # One pool for every row, read back from TensorFlow: the one the CLI gives
    # --max_devices=2 towers on this machine's cores.
    from towertrain.config import machine
    assert data["settings"]["intra_op_threads"] == max(1, machine.available_cores() // 2)
    configs = {(c["mode"], c["devices"]): c for c in data["configurations"]}
    assert set(configs) == EXPECTED and len(data["configurations"]) == len(EXPECTED)
    for (mode, n), c in configs.items():
        assert len(c["images_per_sec"]) == 2 and all(v > 0 for v in c["images_per_sec"])
        assert c["global_batch"] == 4 * n
        assert sorted(c["images_per_sec"])[0] <= c["median_images_per_sec"]
        one = configs[(mode, 1)]["median_images_per_sec"]
        assert c["speedup"] == pytest.approx(c["median_images_per_sec"] / one)
    with open(stem + ".csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * len(EXPECTED)
    assert {(r["mode"], int(r["devices"]), int(r["round"])) for r in rows} == {
        (mode, n, r) for mode, n in EXPECTED for r in (1, 2)}
    for r in rows:  # the CSV's numbers are the JSON's
        c = configs[(r["mode"], int(r["devices"]))]
        assert float(r["images_per_sec"]) == pytest.approx(
            c["images_per_sec"][int(r["round"]) - 1], abs=1e-3)


def test_plot_is_a_png_matplotlib_reads_back(tiny_run):
    done, stem = tiny_run
    if not HAVE_MATPLOTLIB:
        assert NOTE in done.stdout and not os.path.exists(stem + ".png")
        pytest.skip("matplotlib is not installed (pip install 'towertrain[plot]'): no PNG "
                    "to check; checked the note line instead")
    with open(stem + ".png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(stem + ".png")
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    assert NOTE not in done.stdout


def test_without_matplotlib_the_table_and_data_come_with_a_note(tmp_path):
    shim = tmp_path / "shim"
    (shim / "matplotlib").mkdir(parents=True)
    (shim / "matplotlib" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    done = run_scaling(*TINY, "--max_devices=1", "--rounds=1", "--modes=parameter_server",
                       f"--output_dir={tmp_path / 'out'}", cwd=tmp_path,
                       env_extra={"PYTHONPATH": str(shim)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(table_rows(done.stdout)) == {("parameter_server", 1)}
    notes = [line for line in done.stdout.splitlines() if line.startswith("no plot:")]
    assert len(notes) == 1 and notes[0].startswith(NOTE)
    stem = tmp_path / "out" / "scaling_trivial_cpu"
    for suffix in (".txt", ".json", ".csv"):
        assert os.path.exists(f"{stem}{suffix}")
    assert not os.path.exists(f"{stem}.png")


BAD_FLAGS = [
    ("--max_devices=0", "--max_devices=0: must be >= 1"),
    ("--model=nope", "--model=nope: unknown model"),
    ("--num_gpus=2", "--num_gpus=2: set per configuration by the scaling benchmark; "
     "use --max_devices"),
    ("--modes=mirrored", "--modes=mirrored: unknown mode 'mirrored'"),
]

@pytest.fixture(scope="module")
def bad_flag_runs(tmp_path_factory):
    """Every bad command line through the scaling command's entry, in one process."""
    cwd = tmp_path_factory.mktemp("bad_flags")
    runs = run_cases("scaling", [["--device=cpu", flag] for flag, _ in BAD_FLAGS],
                     cwd / "results.json", cwd=cwd)
    return dict(zip([flag for flag, _ in BAD_FLAGS], runs))


@pytest.mark.parametrize("flag,message", BAD_FLAGS)
def test_bad_flags_exit_2_with_one_line(bad_flag_runs, flag, message):
    returncode, stdout, stderr = bad_flag_runs[flag]
    assert returncode == 2
    assert stderr.startswith(f"towertrain: error: {message}"), stderr
    assert stderr.count("\n") == 1
    assert stdout == ""


def test_help_lists_the_scaling_flags(tmp_path):
    done = run_scaling("--help", cwd=tmp_path, timeout=120)
    assert done.returncode == 0
    for flag in ("--max_devices", "--rounds=3", "--output_dir=scaling", "--modes",
                 "--batch_size", "--num_batches", "--data_format"):
        assert flag in done.stdout


def test_one_round_and_an_efficiency_above_100_percent_are_warned_of():
    """--rounds=1 reported 398.7% efficiency without a word."""
    import types
    from towertrain.commands import scaling_plot
    configs = [types.SimpleNamespace(mode="replicated/ring", devices=n, global_batch=4 * n,
                                     median=speed, spread=0.0, images_per_sec=[speed])
               for n, speed in ((1, 100.0), (2, 797.4))]
    settings = {"model": "trivial", "device": "cpu", "data_format": "NHWC", "rounds": 1,
                "num_batches": 2, "batch_size": 4, "keras_batch_norm": "synced",
                "tensorflow": "2.21.0", "intra_op_threads": 1}
    assert scaling_plot.table_lines(configs, settings)[-3:] == [
        "",
        "warning: 1 round: the spread cannot be measured, so nothing says how far these "
        "numbers can be trusted; use --rounds=3 or more",
        "warning: efficiency above 100% (398.7%: replicated/ring on 2 devices) is timing "
        "noise or a slow 1-device row, not a real speed-up; rerun with more --rounds (and "
        "--num_batches)"]
    configs[1].median = 190.0
    settings["rounds"] = 3
    assert scaling_plot.table_lines(configs, settings)[-1].startswith("replicated/ring")
