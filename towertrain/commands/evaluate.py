"""`python -m towertrain --eval`: top-1/top-5 of a checkpoint on an eval split,
or, with --eval_interval_secs, of each new checkpoint of a training run.

The accuracy itself is the engine's (towertrain.engine.evaluation.evaluator); this is
the command's flow around it: restore, header, result lines, summaries.
"""
import tensorflow as tf

from towertrain.callbacks import summaries
from towertrain.engine.run import benchmark_log
from towertrain.engine.evaluation import evaluator as evaluation
from towertrain.state import eval_follower
from towertrain.errors import CheckpointError
from towertrain.state import checkpoint as ckpt_lib


def run_eval(trainer, write=print, eval_data=None):
    """--eval: restores the given or latest checkpoint into the trainer's devices
    (any mode, device count or data format) and evaluates it once on the eval
    split of the trainer's input. With --eval_interval_secs it follows
    --train_dir instead: each new checkpoint once, in step order, until the
    run's final one. With --summary_verbosity>=1 each result also goes to
    TensorBoard: accuracy/top1 and accuracy/top5 in the eval/ subfolder of
    --summary_dir (else --train_dir), at the checkpoint's global step; with
    --eval_dir, into --eval_dir itself. Returns the last result."""
    p, outputs = trainer.params, trainer.plan.outputs
    # Before the restore: fail fast.
    data = evaluation.eval_data_for(trainer.input, trainer.plan.batches.eval_per_process,
                                    outputs, eval_data)
    evaluator = evaluation.Evaluator(trainer.model, trainer.variables, trainer.devices)
    following = p.eval_interval_secs > 0
    if not following:
        path = ckpt_lib.resolve(p.train_dir, p.checkpoint)
        step = _restore(trainer, path)
    # The training facts that do not apply to an eval run are left out.
    info = [(label, value) for label, value in trainer.header_info()
            if label not in ("Dataset", "Mode", "Batch size", "Num batches", "Optimizer",
                             "Learning rate", "Gradient clip", "Loss scale", "Variables",
                             "Weight decay")]
    info[2:2] = [("Dataset", trainer.dataset_name), ("Mode", "evaluation")]
    info.append(("Eval data", evaluation.describe(data, evaluator)))
    if following:
        info.append(("Checkpoints", f"each new one in --train_dir={p.train_dir}, checked "
                                    f"every {p.eval_interval_secs:g}s, until its final one"))
    else:
        info.append(("Checkpoint", f"{path} (step {step})"))
    if p.eval_dir or outputs.summaries_on:
        folder = p.eval_dir or summaries.eval_folder(outputs.logdir)
        at = "each checkpoint's step" if following else f"step {step}"
        info.append(("Summaries", f"{folder} (accuracy/top1, accuracy/top5 at {at})"))
    for line in benchmark_log.header_lines(info):
        write(line)
    results = []

    def evaluate(step):
        result = evaluator.evaluate(data)
        write(evaluation.format_result(result, step))
        if p.eval_dir:  # tf_cnn_benchmarks' --eval_dir: the events go right there
            _write_events(p.eval_dir, step, result)
        elif outputs.summaries_on:  # where eval during training writes, at that step
            summaries.write_eval_result(outputs.logdir, step, result)
        results.append(result)

    if not following:
        evaluate(step)
        return results[-1]

    def evaluate_checkpoint(at_step, checkpoint):
        try:
            restored = _restore(trainer, checkpoint)
        except CheckpointError:
            if eval_follower.gone(checkpoint):
                return False
            raise
        evaluate(restored if restored is not None else at_step)
        return True

    eval_follower.follow(p.train_dir, p.eval_interval_secs, evaluate_checkpoint, write)
    return results[-1] if results else None


def _restore(trainer, path):
    step = ckpt_lib.restore_portable(trainer.model, trainer.variables, path)
    trainer.sync_model()
    return step


def _write_events(directory, step, result):
    """accuracy/top1 and accuracy/top5 at `step` in an event file in `directory`."""
    writer = tf.summary.create_file_writer(directory)
    try:
        with writer.as_default(step=step):
            summaries.write_eval_scalars(result)
        writer.flush()
    finally:
        writer.close()
