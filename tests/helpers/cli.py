"""Running towertrain's commands in a fresh process, as a user would."""
import os
import subprocess
import sys

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def command(*flags, module="towertrain"):
    return [sys.executable, "-m", module, *flags]


def run_cli(*flags, module="towertrain", timeout=240, env=None, check=False):
    """Runs `python -m <module> flags...`; with check, asserts it exited 0."""
    done = subprocess.run(command(*flags, module=module), capture_output=True, text=True,
                          timeout=timeout, env=env)
    if check:
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


def driver(entry, deterministic=False):
    """Source for `python -c` running `towertrain.commands.<entry>.run()` with the
    tests' tiny models registered (helpers.tiny_models)."""
    lines = ["import os, sys"]
    if deterministic:
        lines += ['os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")',
                  "import tensorflow as tf", "tf.config.experimental.enable_op_determinism()"]
    lines += [f"sys.path.insert(0, {TESTS_DIR!r})",
              "import helpers.tiny_models  # registers ckpt_tiny",
              f"from towertrain.commands import {entry} as command",
              "command.run()"]
    return "\n".join(lines) + "\n"


def quiet(line):
    """A `write` that drops the lines a run prints."""
    del line


def unbuffered_env():
    """The environment for a CLI subprocess whose output is read as it comes."""
    return dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="3")
