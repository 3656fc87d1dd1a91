"""Importing TensorFlow: its C++ start-up lines once each, or none.

TensorFlow 2.21 prints its start-up lines (the oneDNN banner, the CPU
feature guard) from C++ while it is imported, before absl logging is set up,
so TF_CPP_MIN_LOG_LEVEL alone does not hide them; and two of its shared
libraries each print the banner, so a plain `import tensorflow` shows it
twice. Where towertrain is first to import TensorFlow (the CLI; the library
when a script imports towertrain before TensorFlow or Keras), the lines are
caught and written once each, or dropped when TF_CPP_MIN_LOG_LEVEL >= 2 (the
CLI's default: they would bury its one-line errors and output).
"""
import os
import re
import sys
import tempfile

# A C++ log line's prefix: severity, date, time, thread id, then file:line.
_PREFIX = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ ")


def start_up_lines_shown():
    return int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0") or 0) < 2


def import_tensorflow(show=None):
    """Imports TensorFlow if no one has. show: write its start-up lines, each
    once (default: unless TF_CPP_MIN_LOG_LEVEL >= 2)."""
    if "tensorflow" in sys.modules:
        return
    show = start_up_lines_shown() if show is None else show
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            import tensorflow  # noqa: F401 - deferred: this is the quiet import itself
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            if show:
                caught.seek(0)
                sys.stderr.write(once_each(caught.read().decode("utf-8", "replace")))
                sys.stderr.flush()


def once_each(text):
    """The lines of `text` in order, less repeats (the same words after the
    log prefix's time and thread); blank lines are kept."""
    seen, kept = set(), []
    for line in text.splitlines(keepends=True):
        key = _PREFIX.sub("", line).rstrip("\n")
        if key and key in seen:
            continue
        seen.add(key)
        kept.append(line)
    return "".join(kept)
