"""--gradient_accumulation_steps through the CLI: a SIGTERM stops at the end of
an update (the staged batches drained), saves, and the same command resumes
to the weights of an uninterrupted run (slots and step included; batch norm
across a stop: tests/state/test_resume_accumulation.py)."""
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from helpers import cifar_files
from helpers.cli import driver, unbuffered_env
from helpers.sweep import full_sweep_only

pytestmark = pytest.mark.slow

DRIVER = driver("train", deterministic=True)


def command(data_dir, train_dir):
    # 40 examples in global batches of 4: 10 batches an epoch; K=3: updates of
    # 3, 3, 3 and 1 batches, 4 an epoch, 12 in all.
    return [sys.executable, "-c", DRIVER, "--model=trivial", "--device=cpu",
            "--num_gpus=2", "--batch_size=2", "--variable_update=replicated",
            "--optimizer=momentum", "--num_warmup_batches=0", "--display_every=1",
            "--gradient_accumulation_steps=3", "--num_epochs=3",
            f"--data_dir={data_dir}", f"--train_dir={train_dir}"]


def saved_tensors(train_dir):
    reader = tf.train.load_checkpoint(train_dir)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith(("model/", "slots/", "step/"))}


# Its parts are proven in the default suite: the drain to the update's end and
# the exact resume in-process (test_resume_accumulation.py), the CLI's SIGTERM
# save (tests/callbacks/test_signals.py). This end-to-end run of both together
# costs three CLI processes: full sweep only.
@full_sweep_only("in-process stop/resume and the CLI's SIGTERM save are tested apart")
def test_sigterm_then_resume_equals_uninterrupted(tmp_path):
    data_dir = cifar_files.write_dataset(str(tmp_path / "data"), 40, 10)
    interrupted = str(tmp_path / "interrupted")
    proc = subprocess.Popen(command(data_dir, interrupted), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=unbuffered_env())
    try:
        output = []
        for line in proc.stdout:
            output.append(line)
            if re.match(r"^1\timages/sec", line):
                proc.send_signal(signal.SIGTERM)
                break
        output.extend(proc.stdout)
        assert proc.wait(timeout=120) == 0
    finally:
        proc.kill()
    stopped = re.search(r"Received SIGTERM: saved checkpoint at step (\d+)", "".join(output))
    assert stopped, "".join(output)[-2000:]
    step = int(stopped.group(1))
    assert 1 <= step < 12
    resumed = subprocess.run(command(data_dir, interrupted), capture_output=True, text=True,
                             env=unbuffered_env(), timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert re.search(rf"Resumed:\s+from step {step} ", resumed.stdout), resumed.stdout
    assert "Accumulation: 3 batches per update (12 examples" in resumed.stdout

    reference = str(tmp_path / "reference")
    subprocess.run(command(data_dir, reference), check=True, capture_output=True,
                   env=unbuffered_env(), timeout=300)
    expected, got = saved_tensors(reference), saved_tensors(interrupted)
    assert sorted(got) == sorted(expected)
    assert int(got["step/.ATTRIBUTES/VARIABLE_VALUE"]) == 12
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], atol=1e-6, rtol=0,
                                   err_msg=f"{name} (stopped at {step})")
