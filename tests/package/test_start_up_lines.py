"""TensorFlow's C++ start-up lines, where towertrain imports TensorFlow: each
once (a plain `import tensorflow` prints the oneDNN banner twice), none with
TF_CPP_MIN_LOG_LEVEL >= 2."""
import os
import subprocess
import sys

from towertrain import tf_import

BANNER = "oneDNN custom operations are on"


def _stderr(code, level=None):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    if level is not None:
        env["TF_CPP_MIN_LOG_LEVEL"] = level
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=dict(env, TF_ENABLE_ONEDNN_OPTS="1"))
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr


def test_the_library_shows_each_start_up_line_once_and_none_when_asked():
    shown = _stderr("import towertrain; towertrain.Trainer")
    assert shown.count(BANNER) == 1, shown
    assert len(shown.splitlines()) == len(set(shown.splitlines())), shown
    assert BANNER not in _stderr("import towertrain; towertrain.Trainer", level="2")


def test_repeats_are_told_apart_by_their_words_not_their_time_or_thread():
    text = ("W: before init\n"
            "I0000 00:00:1795861130.771913   14840 port.cc:153] oneDNN on\n"
            "\n"
            "I0000 00:00:1795861132.280310   14841 port.cc:153] oneDNN on\n"
            "W: before init\n"
            "\n"
            "I0000 00:00:1795861132.280310   14841 port.cc:154] oneDNN on\n")
    assert tf_import.once_each(text) == (
        "W: before init\n"
        "I0000 00:00:1795861130.771913   14840 port.cc:153] oneDNN on\n"
        "\n\n"
        "I0000 00:00:1795861132.280310   14841 port.cc:154] oneDNN on\n")
