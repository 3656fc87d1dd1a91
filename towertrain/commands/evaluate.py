"""`python -m towertrain --eval`: one checkpoint's top-1/top-5 on an eval split.

The accuracy itself is the engine's (towertrain.engine.evaluation); this is
the command's flow around it: restore, header, result line, summaries.
"""
from towertrain.callbacks import summaries
from towertrain.engine import benchmark_log, evaluation
from towertrain.state import checkpoint as ckpt_lib


def run_eval(trainer, write=print, eval_data=None):
    """--eval: restores the given or latest checkpoint into the trainer's devices
    (any mode, device count or data format) and evaluates it once on the eval
    split of the trainer's input. With --summary_verbosity>=1 the result also
    goes to TensorBoard: accuracy/top1 and accuracy/top5 in the eval/ subfolder
    of --summary_dir (else --train_dir), at the checkpoint's global step."""
    p = trainer.params
    data = eval_data or evaluation.eval_data_for(trainer)  # before the restore: fail fast
    path = ckpt_lib.resolve(p.train_dir, p.checkpoint)
    step = ckpt_lib.restore_portable(trainer.model, trainer.variables, path)
    trainer.sync_model()
    evaluator = evaluation.Evaluator(trainer)
    # The training facts that do not apply to an eval run are left out.
    info = [(label, value) for label, value in trainer.header_info()
            if label not in ("Dataset", "Mode", "Batch size", "Num batches", "Optimizer",
                             "Learning rate", "Gradient clip", "Loss scale")]
    info[2:2] = [("Dataset", trainer.dataset_name), ("Mode", "evaluation")]
    info.append(("Eval data", evaluation.describe(data, evaluator)))
    info.append(("Checkpoint", f"{path} (step {step})"))
    logdir = p.summary_dir or p.train_dir
    if p.summary_verbosity:
        info.append(("Summaries", f"{summaries.eval_folder(logdir)} (accuracy/top1, "
                                  f"accuracy/top5 at step {step})"))
    for line in benchmark_log.header_lines(info):
        write(line)
    result = evaluator.evaluate(data)
    write(evaluation.format_result(result, step))
    if p.summary_verbosity:  # where eval during training writes, at the checkpoint's step
        summaries.write_eval_result(logdir, step, result)
    return result
