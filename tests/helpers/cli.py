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


# One fresh process runs several command lines through a command's own entry
# (its flags, absl's app.run with its parser and main), each with its own
# stdout/stderr and exit status: one TensorFlow import for all of them.
_CASES_DRIVER = """
import contextlib, io, json, sys
from absl import app, flags
from towertrain.commands import common, scaling, train
from towertrain.config import flags as flags_lib
if sys.argv[1] == "scaling":
    scaling.define_flags()
    main, parser = scaling.main, common.flags_parser(scaling.help_text)
else:
    flags_lib.define_flags()
    main, parser = train.main, train.parse_flags
results = []
for args in json.loads(sys.argv[2]):
    flags.FLAGS.unparse_flags()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            app.run(main, argv=[sys.argv[1], *args], flags_parser=parser)
            code = 0
        except SystemExit as exit_:
            code = exit_.code
    results.append([code, out.getvalue(), err.getvalue()])
with open(sys.argv[3], "w") as f:
    json.dump(results, f)
"""


def run_cases(entry, cases, results_path, cwd=None, timeout=240):
    """Runs each command line of `cases` (lists of args) through `python -m
    towertrain` (entry "train") or `python -m towertrain.scaling` ("scaling")
    in ONE process; returns [(exit status, stdout, stderr)] per case. The
    process's own stdout/stderr must stay empty: nothing (TensorFlow's C++
    banner included) may leak past a command's one line."""
    import json
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # as a user
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [os.path.dirname(TESTS_DIR), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", _CASES_DRIVER, entry, json.dumps(cases),
                           str(results_path)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), done.stderr[-3000:]
    with open(results_path) as f:
        return [tuple(result) for result in json.load(f)]
