"""--forward_only: an inference benchmark that prints images/sec, trains
nothing and writes nothing."""
import os
import re

import numpy as np
import pytest

from towertrain import Trainer
from towertrain.engine.evaluation import inference
import helpers.tiny_models as tiny

STEP_LINE = re.compile(r"^(\d+)\timages/sec: \d+\.\d \+/- \d+\.\d \(jitter = \d+\.\d\)"
                       r"\t(\d+\.\d{3})\t(\d\.\d{3})\t(\d\.\d{3})$")


@pytest.mark.parametrize("mode", ["replicated", "independent"])
def test_forward_only_runs_inference_mode_and_changes_nothing(mode):
    trainer = Trainer(tiny.tiny_params(mode, gpus=2, num_batches=4, batch_size=5).replace(
        num_warmup_batches=1, display_every=2))
    before = [[v.numpy() for v in copy] for copy in trainer.variables.trainable_copies()]
    stats_before = [v.numpy() for v in trainer.variables.primary_variables()[1]]
    lines = []
    result = inference.run(trainer.plan, trainer.model, trainer.devices, trainer.variables,
                           trainer.feed, trainer.loss_fn, write=lines.append)
    # Nothing trained: no update applied, every copy and the BN statistics unchanged.
    assert trainer.global_step() == 0
    after = [[v.numpy() for v in copy] for copy in trainer.variables.trainable_copies()]
    for copy_before, copy_after in zip(before, after):
        for a, b in zip(copy_before, copy_after):
            np.testing.assert_array_equal(a, b)
    for a, v in zip(stats_before, trainer.variables.primary_variables()[1]):
        np.testing.assert_array_equal(a, v.numpy())
    text = "\n".join(lines)
    assert "Mode:        forward-only" in text
    assert re.search(r"^total images/sec: \d+\.\d\d$", text, re.MULTILINE)
    steps = [STEP_LINE.match(line) for line in lines if STEP_LINE.match(line)]
    assert [int(m.group(1)) for m in steps] == [1, 2, 4]  # timed batches, after warmup
    assert (result.steps, result.examples) == (4, 4 * 10)
    assert result.images_per_sec > 0
    # The printed loss and accuracy are stock Keras inference on the same batch
    # (synthetic data is fixed per device): training=False, the initial weights.
    images = np.concatenate([b[0].numpy() for b in trainer.input._batches])
    labels = np.concatenate([b[1].numpy() for b in trainer.input._batches])
    logits = trainer.model(images, training=False).numpy().astype(np.float64)
    log_probs = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(
        1, keepdims=True)) - logits.max(1, keepdims=True)
    loss = -log_probs[np.arange(len(labels)), labels].mean()
    top1 = (logits.argmax(1) == labels).mean()
    for m in steps:
        assert float(m.group(2)) == pytest.approx(loss, abs=1.5e-3)
        assert float(m.group(3)) == pytest.approx(top1, abs=1e-3)


@pytest.fixture
def cli(capsys, tmp_path, monkeypatch):
    from absl import flags
    from towertrain.commands import train
    from towertrain.config import flags as flags_lib
    flags_lib.define_flags()
    monkeypatch.chdir(tmp_path)

    def run(*args):
        flags.FLAGS.unparse_flags()
        train.parse_flags(["towertrain", "--device=cpu", "--forward_only", *args])
        capsys.readouterr()
        status = train.main(["towertrain"])
        out = capsys.readouterr()
        return status, out.out, out.err
    yield run
    flags.FLAGS.unparse_flags()


def test_the_command_line_prints_images_per_sec_and_writes_nothing(cli, tmp_path):
    status, out, err = cli("--model=trivial", "--num_gpus=2", "--batch_size=4",
                           "--num_batches=3", "--num_warmup_batches=1")
    assert (status, err) == (0, "")
    assert re.search(r"^total images/sec: \d+\.\d\d$", out, re.MULTILINE)
    assert "Mode:        forward-only" in out
    assert os.listdir(tmp_path) == []  # no checkpoint, summary or run record


@pytest.mark.parametrize("args,message", [
    (["--train_dir=run"], "--train_dir=run: does not apply to --forward_only"),
    (["--optimizer=momentum"], "--optimizer=momentum: does not apply to --forward_only"),
    (["--eval"], "--eval=True: does not apply to --forward_only"),
    (["--summary_verbosity=1"], "--summary_verbosity=1: does not apply to --forward_only"),
    (["--staging_depth=2"], "--staging_depth=2: does not apply to --forward_only"),
])
def test_flags_only_training_reads_are_refused(cli, tmp_path, args, message):
    status, out, err = cli(*args)
    assert status == 2 and out == ""
    assert err.startswith(f"towertrain: error: {message} (an inference benchmark that "
                          "trains nothing and writes nothing); drop it")
    assert err.count("\n") == 1
    assert os.listdir(tmp_path) == []
