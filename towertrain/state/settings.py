"""The checkpoints' settings, declared beside the code that saves and
restores them (towertrain.state: checkpoint.py, run_record.py;
towertrain.callbacks.checkpointing saves on schedule), with their refusals.
"""
import os
from typing import Optional

from towertrain.config.declare import NOT_USED, section, setting, tfcnn


@section("Checkpoints and evaluation")
class Checkpoints:
    train_dir: Optional[str] = setting(
        None, "Directory for checkpoints; a run with the same train_dir resumes "
        "from its latest checkpoint.",
        scaling=NOT_USED, path=True, tfcnn=tfcnn("string", None),
        forward_only=False)
    checkpoint: Optional[str] = setting(
        None, "With --eval: the checkpoint to evaluate (default: the latest in "
        "--train_dir). Training: the checkpoint of --train_dir to resume from "
        "instead of its latest (an earlier one, when the latest is damaged).",
        scaling=NOT_USED, path=True,
        forward_only=False)
    save_model_steps: Optional[int] = setting(
        None, "Save a checkpoint every this many steps.",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("integer", None))
    save_model_secs: Optional[float] = setting(
        None, "Save a checkpoint every this many seconds.",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("integer", 0, unset=True))
    max_ckpts_to_keep: int = setting(
        5, "Checkpoints kept in --train_dir.",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("integer", 5))

    @staticmethod
    def refuse(p, fail):
        for flag in ("save_model_steps", "save_model_secs"):
            value = getattr(p, flag)
            if value is not None and not value > 0:
                fail(flag, value, "must be > 0")
        if p.max_ckpts_to_keep < 1:
            fail("max_ckpts_to_keep", p.max_ckpts_to_keep, "must be >= 1")
        if (p.save_model_steps or p.save_model_secs) and not p.train_dir:
            flag = "save_model_steps" if p.save_model_steps else "save_model_secs"
            fail(flag, getattr(p, flag), "needs --train_dir to save into")
        if p.checkpoint and not p.eval and not p.train_dir:
            fail("checkpoint", p.checkpoint, "needs --eval (the checkpoint to evaluate) or "
                 "--train_dir (training resumes from this checkpoint of it)")
        if p.checkpoint and p.train_dir:
            # --checkpoint wins; --train_dir then only matters as the checkpoint's home.
            home = p.checkpoint if os.path.isdir(p.checkpoint) else \
                os.path.dirname(p.checkpoint)
            if os.path.abspath(home) != os.path.abspath(p.train_dir):
                fail("train_dir", p.train_dir, f"--eval reads --checkpoint={p.checkpoint}, "
                     "which is not in it; drop --train_dir" if p.eval else
                     f"--checkpoint={p.checkpoint} is not in it: a run resumes from a "
                     "checkpoint of its own --train_dir")

    @staticmethod
    def refuse_given(p, explicit, fail):
        if "max_ckpts_to_keep" in explicit and not p.train_dir:
            fail("max_ckpts_to_keep", p.max_ckpts_to_keep,
                 "needs --train_dir (nothing is saved without one)")
