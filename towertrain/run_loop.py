"""The training loop around the step: resume, periodic saves, signals, eval.

Kept apart from the Trainer so the step function's file stays small. Order of
one iteration: run a step, check its loss (a NaN raises before anything is
saved, so a diverged state never reaches disk), log, evaluate if due, save if
due or if SIGINT/SIGTERM arrived (then stop).
"""
import signal
import time

from towertrain import benchmark_log, checkpoint as ckpt_lib, evaluation


class _StopRequest:
    """Turns SIGINT/SIGTERM into a flag checked between steps."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.received = None
        self._previous = {}

    def __enter__(self):
        try:
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        except ValueError:  # not the main thread: signals stay as they were
            self._previous.clear()
        return self

    def _handle(self, signum, frame):
        del frame
        self.received = signal.Signals(signum).name

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


class Checkpointer:
    """Saves and restores one trainer's state in train_dir."""

    def __init__(self, trainer, train_dir, max_to_keep=5):
        import tensorflow as tf
        ckpt_lib.ensure_writable(train_dir)
        self.trainer = trainer
        self.train_dir = train_dir
        self.state = ckpt_lib.EngineState(trainer.model, trainer.variables, trainer.input)
        self._checkpoint = self.state.checkpoint()
        self.manager = tf.train.CheckpointManager(self._checkpoint, train_dir,
                                                  max_to_keep=max_to_keep)
        self.last_saved_step = None

    def restore_latest(self, checkpoint_path=None):
        """Restores the given or latest checkpoint; returns its path, or None if none."""
        path = checkpoint_path or self.manager.latest_checkpoint
        if not path:
            return None
        ckpt_lib.restore(self._checkpoint, path, self.state.variables)
        self.state.sync_copies()
        self.last_saved_step = self.state.global_step()
        return path

    def save(self):
        step = self.state.global_step()
        if step == self.last_saved_step:
            return self.manager.latest_checkpoint
        path = self.manager.save(checkpoint_number=step)
        self.last_saved_step = step
        return path


def train(trainer, write=print, eval_dataset=None):
    """Runs the trainer to num_warmup_batches + num_batches total steps."""
    p = trainer.params
    # The trainer may derive the counts (e.g. from --num_epochs); else the flags.
    warmup = getattr(trainer, "num_warmup_batches", p.num_warmup_batches)
    total = warmup + getattr(trainer, "num_batches", p.num_batches)
    saver = None
    extra = []
    if p.train_dir:
        saver = Checkpointer(trainer, p.train_dir, p.max_ckpts_to_keep)
        ckpt_lib.write_run_info(p.train_dir, run_info(trainer))
        resumed = saver.restore_latest()
        extra.append(("Train dir", p.train_dir))
        if resumed:
            extra.append(("Resumed", f"from step {saver.last_saved_step} ({resumed})"))
    start = int(trainer.variables.iterations().numpy())
    for line in benchmark_log.header_lines(trainer.header_info() + extra):
        write(line)
    evaluator = None
    if p.eval_during_training_every_n_steps:
        evaluator = evaluation.Evaluator(trainer.model, trainer.variables, trainer.devices)
        eval_dataset = eval_dataset or evaluation.eval_dataset_for(trainer)

    from towertrain.trainer import TrainResult  # deferred: trainer imports this module
    if start >= total:
        write(f"Already at step {start} of {total}; nothing to train")
        return TrainResult(0.0, float("nan"), start)

    logger = benchmark_log.StepLogger(trainer.global_batch_size, p.display_every, write)
    loss = float("nan")
    last_save_time = time.monotonic()
    with _StopRequest() as stop:
        if start < warmup:
            write("Running warm up")
        timing = False
        for step in range(start + 1, total + 1):
            if step > warmup and not timing:
                logger.start()  # the clock starts just before the first timed step
                timing = True
            loss = trainer._checked_step()  # raises on NaN/Inf before any save
            if timing:
                logger.step_done(loss)
            elif step == warmup:
                write("Done warm up")
            if evaluator and step % p.eval_during_training_every_n_steps == 0:
                write(evaluation.format_result(evaluator.evaluate(eval_dataset), step))
                if timing:
                    logger.exclude_pause()
            if saver is None:
                if stop.received:
                    write(f"Received {stop.received}: stopping at step {step} "
                          "(no --train_dir, nothing saved)")
                    break
                continue
            due = ((p.save_model_steps and step % p.save_model_steps == 0) or
                   (p.save_model_secs and time.monotonic() - last_save_time >= p.save_model_secs))
            if stop.received:
                path = saver.save()
                write(f"Received {stop.received}: saved checkpoint at step {step} to {path}")
                break
            if due:
                saver.save()
                last_save_time = time.monotonic()
                if timing:
                    logger.exclude_pause()
        else:
            if saver is not None:
                path = saver.save()
                write(f"Saved checkpoint at step {total} to {path}")
    images_per_sec = logger.finish() if logger.step_times else 0.0
    return TrainResult(images_per_sec, loss, int(trainer.variables.iterations().numpy()))


def run_info(trainer):
    """What export and eval need to rebuild the model without the training flags."""
    return {
        "model": trainer.params.model,
        "data_name": trainer.dataset_name,
        "num_classes": int(trainer.model.output_shape[-1]),
        "data_format": trainer.data_format,
        "input_shape": [int(d) for d in trainer.model.input_shape[1:]],
    }
