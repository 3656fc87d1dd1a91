"""--loss_type_to_report, --single_l2_loss_op and --display_perf_ewma (docs:
Training), each against an independent computation."""
import numpy as np
import pytest

from towertrain import Trainer
from towertrain.callbacks import StepPrinter
from towertrain.trainer import StepResult
from towertrain.engine.run.settings import Display

from helpers import tiny_models  # noqa: F401 - registers ckpt_tiny
from helpers.graph_walks import all_ops
from helpers.run_handles import default_callbacks_for

DECAY = 0.05


def first_step(**kw):
    """(loss of one step, L2 of the decayed initial weights)."""
    trainer = Trainer(tiny_models.tiny_params(gpus=2, **kw))
    try:
        decayed = [w.numpy() for w, decay in zip(trainer.model.trainable_variables,
                                                 trainer.decay_mask) if decay]
        l2 = sum(0.5 * float(np.sum(w.astype(np.float64) ** 2)) for w in decayed)
        return trainer.step().loss, l2
    finally:
        trainer.close()


def test_base_loss_leaves_the_weight_decay_out_and_total_loss_has_it():
    total, l2 = first_step(weight_decay=DECAY)
    base, _ = first_step(weight_decay=DECAY, loss_type_to_report="base_loss")
    undecayed, _ = first_step(weight_decay=0.0)
    assert l2 > 0
    assert base == pytest.approx(undecayed, rel=1e-6)  # the same step, decay not shown
    assert total - base == pytest.approx(DECAY * l2, rel=1e-4)


def test_the_step_lines_name_the_reported_loss():
    for loss_type in ("base_loss", "total_loss"):
        trainer = Trainer(tiny_models.tiny_params(gpus=1, num_batches=2,
                                                  loss_type_to_report=loss_type))
        lines = []
        try:
            trainer.train(write=lines.append)
        finally:
            trainer.close()
        assert f"Step\tImg/sec\t{loss_type}" in lines


def l2_ops(**kw):
    trainer = Trainer(tiny_models.tiny_params(gpus=2, weight_decay=DECAY, **kw))
    try:
        ops = all_ops(trainer.trace_step().graph)
        return [op for op in ops if op.type == "L2Loss"], trainer.step().loss
    finally:
        trainer.close()


def test_single_l2_loss_op_is_one_l2_loss_per_tower_with_the_same_value():
    per_variable, loss = l2_ops()
    single, single_loss = l2_ops(single_l2_loss_op=True)
    # ckpt_tiny decays 2 kernels (conv, dense): 2 ops per tower, or 1 over both.
    assert len(per_variable) == 2 * 2 and len(single) == 2, (per_variable, single)
    assert all(op.inputs[0].op.type == "ConcatV2" for op in single)
    assert single_loss == pytest.approx(loss, rel=1e-6)


class _Loop:
    start_step, total_steps = 0, 100

    @staticmethod
    def header_info():
        return []


def printed_speeds(ewma, seconds, examples=6):
    lines = []
    printer = StepPrinter(Display(display_every=1), num_warmup_batches=0, write=lines.append,
                          ewma=ewma)
    printer.before_train(_Loop())
    for step, secs in enumerate(seconds, 1):
        printer.after_step(step, StepResult(1.0, examples, True), secs)
    return [float(line.split("images/sec: ")[1].split()[0]) for line in lines
            if "images/sec: " in line]


def test_display_perf_ewma_weights_recent_step_times_as_tf_cnn_benchmarks():
    seconds = [0.1, 0.1, 0.1, 0.4, 0.4]
    alpha = 0.5
    shown = printed_speeds(alpha, seconds)
    for n, value in enumerate(shown, 1):
        # tf_cnn_benchmarks' get_perf_timing: batch / np.average(times, weights=...).
        times = np.array(seconds[:n])
        weights = np.logspace(n - 1, 0, n, base=1 - alpha)
        assert value == pytest.approx(6 / np.average(times, weights=weights), abs=0.06)
    plain = printed_speeds(None, seconds)
    assert plain[-1] == pytest.approx(np.mean(6 / np.array(seconds)), abs=0.06)
    assert shown[-1] < plain[-1]  # the recent slow steps weigh more


def test_display_perf_ewma_reaches_the_step_printer():
    trainer = Trainer(tiny_models.tiny_params(gpus=1, display_perf_ewma=0.25))
    try:
        built = default_callbacks_for(trainer, write=lambda _: None)
    finally:
        trainer.close()
    printer, = [c for c in built if isinstance(c, StepPrinter)]
    assert printer.times.ewma == 0.25
