"""Every path a run will write, checked before the first step.

An unwritable --summary_dir used to fail mid-run (PermissionDeniedError at the
first summary) or, on a short run, not at all while nothing was written; an
unwritable export --output failed after the work with a traceback. Here each
path is checked up front, and a failed check leaves nothing behind: no
directory is created until every path has passed (the probe file lives for an
instant in the nearest directory that already exists).
"""
import os
import tempfile

from towertrain.errors import ParamsError


def _nearest_existing(path):
    path = os.path.abspath(path)
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def problem(path, is_file=False):
    """Why `path` (a directory to create or fill, or a file when is_file) cannot
    be written, or None."""
    if os.path.exists(path):
        if is_file and os.path.isdir(path):
            return "is a directory"
        if not is_file and not os.path.isdir(path):
            return "is a file, not a directory"
    # An existing directory is its own nearest existing one.
    probe_in = _nearest_existing(os.path.dirname(os.path.abspath(path)) if is_file else path)
    if not os.path.isdir(probe_in):
        return f"{probe_in} is a file, not a directory"
    try:
        with tempfile.TemporaryFile(dir=probe_in, prefix=".towertrain_write_test"):
            pass  # created and removed at once
    except OSError as err:
        return f"not writable ({err.strerror or err})"
    return None


def check(paths):
    """paths: (flag, path, is_file) triples; raises ParamsError naming the first
    unwritable one, before anything is written."""
    for flag, path, is_file in paths:
        if not path:
            continue
        why = problem(path, is_file)
        if why:
            raise ParamsError(f"--{flag}={path}: {why}; choose a path this user can write "
                              "(checked before training, nothing was written)")


def run_paths(outputs, training=True):
    """The paths a run with `outputs` (the plan's Outputs section) writes:
    (flag, path, is_file). training: False for an --eval run, which writes
    no checkpoint and no trace."""
    paths = []
    if outputs.train_dir and training:
        paths.append(("train_dir", outputs.train_dir, False))
    if outputs.summary_dir and outputs.writes_logdir:
        paths.append(("summary_dir", outputs.summary_dir, False))
    if outputs.trace_file and training:
        paths.append(("trace_file", outputs.trace_file, True))
    return paths


def check_run(outputs, training=True):
    check(run_paths(outputs, training))
