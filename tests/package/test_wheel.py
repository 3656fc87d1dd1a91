"""A wheel built from the repository holds every package and trains when
installed non-editable into a fresh virtual environment.

The editable install hides a package missing from setup.py (it maps the source
folders), so the wheel is built from a copy of the sources, installed with
`pip install --no-deps` into a new venv, and run from a folder outside the
checkout. The venv borrows this interpreter's TensorFlow through a .pth line
naming its site-packages (installing TensorFlow again would cost minutes):
unlike --system-site-packages, that does not run the .pth files there, so
the editable install's import hook cannot fill in what the wheel lacks.
"""
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What a wheel is built from (setup.py reads README.md for the long description).
BUILD_INPUTS = ("towertrain", "models", "input_pipeline", "setup.py", "pyproject.toml",
                "README.md")
# Source folder -> where its files land in the wheel (setup.py's package_dir).
INSTALLED_AS = {"towertrain": "towertrain", "models": "towertrain/models",
                "input_pipeline": "towertrain/input_pipeline"}

pytestmark = pytest.mark.slow


def source_files():
    """Every .py file the package is made of, as its path inside the wheel."""
    wanted = set()
    for folder, target in INSTALLED_AS.items():
        for dirpath, dirnames, files in os.walk(os.path.join(ROOT, folder)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            rel = os.path.relpath(dirpath, os.path.join(ROOT, folder))
            for name in files:
                if name.endswith(".py"):
                    inside = os.path.normpath(os.path.join(target, rel, name))
                    wanted.add(inside.replace(os.sep, "/"))
    return wanted


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """Builds the wheel from a copy of the sources (pip builds in the source
    folder and would leave build/ and *.egg-info in the checkout)."""
    work = tmp_path_factory.mktemp("wheel")
    copy = work / "src"
    copy.mkdir()
    for name in BUILD_INPUTS:
        source = os.path.join(ROOT, name)
        if os.path.isdir(source):
            shutil.copytree(source, copy / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(source, copy / name)
    out = work / "dist"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "-q", "-w", str(out), str(copy)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = out.glob("towertrain-*.whl")
    return path


def test_the_wheel_holds_every_module_of_the_source_tree(wheel):
    with zipfile.ZipFile(wheel) as archive:
        held = {name for name in archive.namelist() if name.endswith(".py")}
    missing = sorted(source_files() - held)
    assert not missing, f"setup.py leaves these out of the wheel: {missing}"
    assert "towertrain/callbacks/__init__.py" in held  # the package once left out
    # Nothing lands outside towertrain/ (no generic top-level models package).
    assert {name.split("/")[0] for name in held} == {"towertrain"}


def test_a_fresh_venv_with_the_wheel_trains(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = str(env_dir / "bin" / "python")
    own_site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(own_site, "borrowed_packages.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    # pip from this interpreter, pointed at the new environment.
    done = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install",
                           "--no-deps", "--no-index", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0 and "no such option: --python" in done.stderr:
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                               "--no-index", "-q", "--prefix", str(env_dir), str(wheel)],
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    outside = tmp_path / "elsewhere"  # not the checkout: its folders must not be found
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    where = subprocess.run(
        [python, "-c", "import towertrain.models, towertrain.callbacks, towertrain.engine.distributed.cluster;"
         " print(towertrain.__file__); print(towertrain.models.__file__)"],
        cwd=outside, env=env, capture_output=True, text=True, timeout=120)
    assert where.returncode == 0, where.stderr
    for line in where.stdout.split():
        assert line.startswith(str(env_dir)), (line, "is not the installed copy")
    run = subprocess.run(
        [python, "-m", "towertrain", "--model=trivial", "--device=cpu", "--num_gpus=2",
         "--variable_update=replicated", "--num_batches=3", "--num_warmup_batches=1",
         "--display_every=1"],
        cwd=outside, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    steps = [line for line in run.stdout.splitlines() if "images/sec:" in line
             and not line.startswith("total")]
    assert len(steps) == 3, run.stdout
    assert "total images/sec:" in run.stdout
