"""A multi-worker process's log file (towertrain.commands.worker_log): what
goes to descriptor 2 lands there, towertrain's own lines stay on the
terminal, and which exits leave it behind. In a fresh process, since the
diversion is once per process."""
import os
import subprocess
import sys

import pytest

from helpers import cluster_runs as runs

_CHILD = """
import os, sys
from towertrain.commands import worker_log
path = worker_log.divert(1, sys.argv[1])
os.write(2, b"E0000 util.cc:131] a harmless ERROR line\\n")
print("towertrain: on the terminal", file=sys.stderr, flush=True)
print(path, flush=True)
{end}
"""


@pytest.mark.parametrize("end,kept", [
    ("worker_log.discard()", False),  # a run that ended well: nothing names the log
    ("sys.exit(1)", True),  # a failure keeps what TensorFlow wrote
])
def test_a_clean_end_removes_the_log_a_failure_keeps_it(tmp_path, end, kept):
    done = subprocess.run([sys.executable, "-c", _CHILD.format(end=end), str(tmp_path)],
                          env=runs.env(TF_CPP_MIN_LOG_LEVEL="3"), cwd=runs.REPO,
                          capture_output=True, text=True, timeout=60)
    path = done.stdout.strip()
    assert path == os.path.join(str(tmp_path), f"task1-{path.rsplit('-', 1)[1]}")
    assert done.stderr == "towertrain: on the terminal\n"
    assert os.path.exists(path) == kept
    if kept:
        with open(path) as f:
            assert f.read() == "E0000 util.cc:131] a harmless ERROR line\n"


@pytest.mark.parametrize("level,given,expected", [
    ("3", None, "ERROR"),  # the CLI's default: the abort's ERROR lines reach the file
    ("0", None, None),  # --verbose: everything on the terminal already
    ("3", "debug", "debug"),  # the user's own choice stays
])
def test_before_join_lets_tensorflows_error_lines_through(monkeypatch, level, given, expected):
    from towertrain.commands import worker_log
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", level)  # what start_up_lines_shown reads
    environ = {} if given is None else {"GRPC_VERBOSITY": given}
    worker_log.before_join(environ)
    assert environ.get("GRPC_VERBOSITY") == expected
