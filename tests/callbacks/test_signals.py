"""SIGINT/SIGTERM stop cleanly: the first stops the loop, a second exits at once;
through the CLI the step it names is saved."""
import os
import re
import signal
import subprocess
import time
import types

import pytest
import tensorflow as tf

from towertrain.engine import loop as loop_lib
from towertrain.callbacks import StopOnSignal

from helpers import tiny_models  # noqa: F401 - registers ckpt_tiny
import helpers.cli


# ---------------------------------------------------------------------------
# 6. SIGINT/SIGTERM: the first stops the loop, a second exits at once.

class _Exited(Exception):
    pass


def _fake_exit(code):
    raise _Exited(code)


def _wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


@pytest.mark.parametrize("first,second", [(signal.SIGTERM, signal.SIGTERM),
                                          (signal.SIGINT, signal.SIGTERM)])
def test_first_signal_stops_the_loop_and_a_second_exits_at_once(monkeypatch, first, second):
    fake_trainer = types.SimpleNamespace(global_step=lambda: 0, total_steps=10)
    callback = StopOnSignal(saves_on_stop=False, write=helpers.cli.quiet)
    loop = loop_lib.Loop(fake_trainer, [callback])
    previous = {sig: signal.getsignal(sig) for sig in StopOnSignal.SIGNALS}
    monkeypatch.setattr(os, "_exit", _fake_exit)
    callback.before_train(loop)
    try:
        os.kill(os.getpid(), first)  # handled: nothing exits
        assert _wait_for(lambda: loop.stop_reason is not None)
        assert loop.stop_reason == signal.Signals(first).name
        with pytest.raises(_Exited) as exited:
            os.kill(os.getpid(), second)
            _wait_for(lambda: False, timeout=5)
        assert exited.value.args == (128 + second,)
        assert loop.stop_reason == signal.Signals(first).name  # the first reason is kept
    finally:
        callback.close()
    for sig, handler in previous.items():
        assert signal.getsignal(sig) is handler


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
