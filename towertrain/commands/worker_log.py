"""A multi-worker process's TensorFlow log: its C++ lines go to a file, not
the terminal.

When a peer dies, TensorFlow's gRPC and collective runtime log the abort
from C++ on file descriptor 2 (ring_alg.cc, RecvBuf, "Restart your program to
reset"), a dozen lines per survivor under the one line towertrain prints.
Once the worker has joined its cluster, descriptor 2 points at
<tmp>/towertrain-logs/task<K>-<pid>.log and Python's sys.stderr keeps the
terminal, so towertrain's own lines (and Python's warnings) still show, and
the survivor's line names the file when TensorFlow wrote to it. A run that
ends well removes its log whatever it holds (discard: TensorFlow's harmless
ERROR lines, such as oneDNN's fallbacks, would leave one per worker per run),
any other exit an empty one; a worker killed outright cannot, so the launcher
removes the empty log of each worker it reaped (remove_if_empty).

The CLI hides TensorFlow's C++ logging (TF_CPP_MIN_LOG_LEVEL=3), which would
leave the file empty: the abort lines are ERROR lines. But gRPC, once it
starts the worker's server (the cluster's join), sets the C++ threshold from
GRPC_VERBOSITY when that is set; before_join sets it to ERROR, so the abort
lines reach the file (and only the file: the join is followed by divert).
--verbose (TF_CPP_MIN_LOG_LEVEL < 2) leaves everything on the terminal.
"""
import atexit
import os
import sys
import tempfile

from towertrain import tf_import

_STATE = {"path": None}


def kept():
    """The log's path if TensorFlow wrote to it; an empty one is removed
    (also at a normal exit). For a line that names the log only when it holds
    something."""
    log_path = _STATE["path"]
    if log_path is None:
        return None
    remove_if_empty(log_path)
    return log_path if os.path.exists(log_path) else None


def path_of(task_index, pid, directory=None):
    """Where worker task `task_index` of process `pid` keeps its log."""
    directory = directory or os.path.join(tempfile.gettempdir(), "towertrain-logs")
    return os.path.join(directory, f"task{task_index}-{pid}.log")


def before_join(environ=None):
    """Before the cluster's join starts gRPC: TensorFlow's ERROR lines (a lost
    peer's abort) are logged, to the file divert opens after the join. A
    GRPC_VERBOSITY the user set stays; --verbose changes nothing."""
    environ = os.environ if environ is None else environ
    if not tf_import.start_up_lines_shown():
        environ.setdefault("GRPC_VERBOSITY", "ERROR")


def divert(task_index, directory=None):
    """Sends descriptor 2 to this worker's log file, once; returns its path
    (None when --verbose asks for TensorFlow's lines, or the file cannot be made)."""
    if _STATE["path"] is not None or tf_import.start_up_lines_shown():
        return _STATE["path"]
    log_path = path_of(task_index, os.getpid(), directory)
    directory = os.path.dirname(log_path)
    try:
        os.makedirs(directory, exist_ok=True)
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:
        return None  # the terminal keeps everything, as before
    sys.stderr.flush()
    terminal = os.dup(2)
    os.dup2(log, 2)
    os.close(log)
    sys.stderr = os.fdopen(terminal, "w", buffering=1, encoding=sys.stderr.encoding,
                           errors="backslashreplace")
    _STATE["path"] = log_path
    atexit.register(remove_if_empty, log_path)
    return log_path


def discard():
    """The run ended well: no line names the log, so it goes, whatever it holds."""
    if _STATE["path"] is not None:
        try:
            os.remove(_STATE["path"])
        except OSError:
            pass


def remove_if_empty(log_path):
    try:
        if os.path.getsize(log_path) == 0:
            os.remove(log_path)
    except OSError:
        pass
