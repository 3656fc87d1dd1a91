"""SIGINT/SIGTERM stop cleanly: the first stops the loop, a second exits at once;
through the CLI the step it names is saved."""
import os
import re
import signal
import subprocess
import sys
import threading
import time
import types

import pytest
import tensorflow as tf

from towertrain.engine.run import loop as loop_lib
from towertrain.callbacks import StopOnSignal

from helpers import tiny_models  # noqa: F401 - registers ckpt_tiny
import helpers.cli


# ---------------------------------------------------------------------------
# 6. SIGINT/SIGTERM: the first stops the loop, a second exits at once.

def _wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


@pytest.mark.parametrize("first,second", [(signal.SIGTERM, signal.SIGTERM),
                                          (signal.SIGINT, signal.SIGTERM)])
def test_first_signal_stops_the_loop_and_a_second_exits_at_once(first, second, capfd):
    fake_trainer = types.SimpleNamespace(global_step=lambda: 0)  # the run's handles
    exits = []
    callback = StopOnSignal(saves_on_stop=False, write=helpers.cli.quiet, exit=exits.append)
    loop = loop_lib.Loop(fake_trainer, [callback], total_steps=10)
    previous = {sig: signal.getsignal(sig) for sig in StopOnSignal.SIGNALS}
    callback.before_train(loop)
    try:
        os.kill(os.getpid(), first)  # handled: nothing exits
        assert _wait_for(lambda: loop.stop_reason is not None)
        assert loop.stop_reason == signal.Signals(first).name
        assert not exits
        assert "send it again to exit at once" in capfd.readouterr().err
        os.kill(os.getpid(), second)
        assert _wait_for(lambda: exits)
        assert exits == [128 + second]
        assert loop.stop_reason == signal.Signals(first).name  # the first reason is kept
    finally:
        callback.close()
    for sig, handler in previous.items():
        assert signal.getsignal(sig) is handler
    assert signal.set_wakeup_fd(-1) == -1  # the wakeup socket is released


# A step that lasts a minute: one TensorFlow call the main thread does not
# return from, so a Python signal handler would only run after it.
_LONG_STEP = """
import sys
sys.path.insert(0, {tests!r})
from towertrain import Params, Trainer
from helpers.slow_input import SlowInput, model
params = Params(device="cpu", num_gpus=1, staging_depth=0, num_batches=5,
                num_warmup_batches=0, init_learning_rate=0.01)
trainer = Trainer(params, model=model(compute_s=60), input_source=SlowInput(0))
trainer.train()
"""


@pytest.mark.slow
def test_a_second_sigint_during_a_long_step_exits_at_once_with_130():
    proc = subprocess.Popen([sys.executable, "-c", _LONG_STEP.format(tests=helpers.cli.TESTS_DIR)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=helpers.cli.unbuffered_env())
    try:
        errors = []
        threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True).start()
        for line in proc.stdout:  # the header ends before the first step
            if line.startswith("=========="):
                break
        time.sleep(2)  # into the first step (tracing, then the 60 s sleep)
        proc.send_signal(signal.SIGINT)
        assert _wait_for(lambda: any("received SIGINT: stopping after the current step" in line
                                     for line in errors), timeout=10), errors
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
        assert time.monotonic() - sent < 20
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGINT
    assert _wait_for(lambda: any("received SIGINT again: exiting now" in line
                                 for line in errors)), errors


@pytest.mark.slow
def test_sigterm_through_the_cli_saves_the_step_it_names_and_exits_zero(tmp_path):
    train_dir = str(tmp_path)
    proc = subprocess.Popen(helpers.cli.command("--model=trivial", "--device=cpu", "--num_gpus=2",
                                 "--num_warmup_batches=0", "--batch_size=4", "--display_every=1",
                                 "--num_batches=100000", f"--train_dir={train_dir}"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=helpers.cli.unbuffered_env())
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if re.match(r"^3\t", line):
                break
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = "".join(lines) + out
    assert proc.returncode == 0, err
    stopped = re.search(r"^Received SIGTERM: saved checkpoint at step (\d+) to (\S+)$", text,
                        re.M)
    assert stopped, text
    step = int(stopped.group(1))
    # The step saved is the last one finished, and its step line was printed.
    last_logged = max(int(m.group(1)) for m in re.finditer(r"^(\d+)\timages/sec", text, re.M))
    assert step == last_logged >= 3
    assert stopped.group(2).endswith(f"ckpt-{step}")
    assert tf.train.latest_checkpoint(train_dir).endswith(f"ckpt-{step}")
    reader = tf.train.load_checkpoint(train_dir)
    assert int(reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE")) == step


ONE_LINE_130 = (130, "", [
    "towertrain: received SIGINT outside a training step: exiting with status 130 (a run "
    "with --train_dir resumes from its last checkpoint)"])


def _interrupted(command, until_ready):
    """(status, stdout, stderr lines) of `command` sent SIGINT once until_ready(proc) returns."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=helpers.cli.unbuffered_env())
    try:
        until_ready(proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err.splitlines()


def test_ctrl_c_while_the_cli_starts_is_one_line_and_status_130(tmp_path):
    """SIGINT a second in (TensorFlow's import, long before the first step):
    KeyboardInterrupt printed a 60-200 line traceback."""
    command = helpers.cli.command("--model=trivial", "--device=cpu", "--num_batches=100000",
                                  f"--train_dir={tmp_path}")
    assert _interrupted(command, lambda proc: time.sleep(1)) == ONE_LINE_130


SWALLOWING_COMMAND = """
import sys, time
from absl import flags
from towertrain.commands import common

def main(argv):
    print("importing", flush=True)
    try:  # as a library imported on the way may: every exception caught
        time.sleep(60)
    except:  # noqa: E722
        pass
    print("trained anyway", flush=True)

common.run_app(main, lambda argv: flags.FLAGS(argv))
"""


def test_ctrl_c_during_an_import_that_catches_every_exception_still_exits_130():
    """Python's KeyboardInterrupt is raised into whatever code runs; a bare
    `except:` there swallowed it and the run went on to train."""
    def importing(proc):
        assert proc.stdout.readline() == "importing\n"
    assert _interrupted([sys.executable, "-c", SWALLOWING_COMMAND], importing) == ONE_LINE_130
