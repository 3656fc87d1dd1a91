"""`~` in a path flag is the user's home in every command, also where no
shell expanded it (`--train_dir=~/run`, a flag file): it created ./~/run."""
import os
import subprocess
import sys

from towertrain.commands import common
from towertrain.config import settings

import helpers.cli


def _run(module, flags, home, cwd):
    env = dict(helpers.cli.unbuffered_env(), HOME=str(home),
               PYTHONPATH=os.pathsep.join([os.path.dirname(helpers.cli.TESTS_DIR),
                                           os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", module, *flags], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_a_tilde_in_train_dir_and_export_output_is_the_home(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    out = _run("towertrain", ["--model=trivial", "--device=cpu", "--num_batches=1",
                              "--num_warmup_batches=0", "--train_dir=~/run"], home, cwd)
    assert f"Train dir:   {home}/run\n" in out, out
    assert os.path.exists(home / "run" / "ckpt-1.index")
    _run("towertrain.export", ["--train_dir=~/run", "--output=~/model.keras"], home, cwd)
    assert os.path.exists(home / "model.keras")
    assert os.listdir(cwd) == []  # no ./~ anywhere


def test_every_path_flag_of_every_command_expands_the_home():
    """The family: each flag that names a file or folder, by its name, in
    towertrain's settings and export's and scaling's own flags."""
    from towertrain import Params
    from towertrain.commands import export, scaling
    names = [s.name for s in settings.SETTINGS if s.type == settings.STRING]
    names += list(export.FLAG_NAMES) + list(scaling.OWN_FLAGS)
    paths = [n for n in names if n.endswith(("_dir", "_file", "output", "checkpoint",
                                             "saved_model"))]
    assert len(set(paths)) == 11, paths
    assert set(paths) <= set(settings.PATH_SETTINGS + common.OTHER_PATH_FLAGS), paths
    expanded = Params(train_dir="~/x", summary_dir="~/x", summary_verbosity=1,
                      benchmark_log_dir="~/x")
    assert {expanded.train_dir, expanded.summary_dir, expanded.benchmark_log_dir} == {
        os.path.expanduser("~/x")}
