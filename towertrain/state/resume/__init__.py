"""The run's resume, in one place: the trainer calls `resume` once, before the
loop's callbacks are built (they only save and observe).

The chief of a run with --train_dir, in this order:
  1. proves train_dir writable, rewrites a lost `checkpoint` state file
     (leftovers.py) and refuses a disk that cannot hold one checkpoint;
  2. takes the train_dir's lock (train_dir_lock.py): one training run per
     train_dir, held until the saver's close or the process's end;
  3. removes the unfinished saves a killed run left (leftovers.py);
  4. holds this run to the run record's contract (contract.py): the same model
     and dataset, and when it resumes the same state settings and input;
  5. restores the given or latest checkpoint (checkpointer.py, topology.py),
     refusing a given one that train_dir holds later checkpoints than
     (branch.py: its saves would overwrite them);
  6. multi-worker, agrees with every worker on what each restored
     (agreement.py), before the record changes;
  7. rewrites the run record for this run.
A refusal at any step leaves the train_dir's record as it was and frees the
lock. A non-chief worker restores the chief's latest checkpoint (no lock,
nothing written) and agrees; a run without --train_dir only agrees.
"""
from towertrain.engine.distributed import cluster as cluster_lib
from towertrain.plan import cluster as resolvers
from towertrain.plan.learning_rate import source as lr_source
from towertrain.state import checkpoint as ckpt_lib
from towertrain.state import run_record

from . import agreement
from . import branch
from . import contract
from . import leftovers
from . import train_dir_lock
from .checkpointer import Checkpointer


class Resumed:
    """What the run's resume did: the train_dir's Checkpointer (the chief's,
    for the saver; None without --train_dir and on a non-chief worker), the
    checkpoint it restored (None: none), the header's lines about it, and the
    train_dir's lock, which release() frees."""

    def __init__(self, checkpointer=None, lock=None, resumed_from=None):
        self.checkpointer = checkpointer
        self.lock = lock
        self.resumed_from = resumed_from
        self.resume_changes = []  # header lines: what the resume changed by design
        self.removed = []  # ckpt-N_temp/ folders of saves a killed run never finished
        # --gradient_pack_mb=auto: the record's pick in MB, where this run resumes (the chief's).
        self.pack_pick = None

    def record_pack_pick(self, entry):
        """--gradient_pack_mb=auto's pick (PackTuning.record_entry) into the run
        record: the chief's, with --train_dir; elsewhere nothing is written."""
        if self.checkpointer is not None:
            run_record.record_pack_pick(self.checkpointer.train_dir, entry)

    def restore(self, checkpoint_path=None):
        """Resumes from `checkpoint_path` (--checkpoint), else the latest
        checkpoint in train_dir, if there is one."""
        self.resumed_from = self.checkpointer.restore_latest(checkpoint_path)
        return self.resumed_from

    def header_info(self):
        info = []
        if self.resumed_from:
            info.append(("Resumed", f"from step {self.checkpointer.last_saved_step} "
                                    f"({self.resumed_from})"))
            info.extend(self.checkpointer.topology.header_info(
                rate_changed=any(label in ("Learning rate", "Settings")
                                 for label, _ in self.resume_changes)))
            info.extend(self.resume_changes)
        if self.removed:
            info.append(("Removed", f"{', '.join(n + '/' for n in self.removed)}: unfinished "
                                    "saves of a run that was killed (the checkpoints are whole)"))
        if self.checkpointer is not None and self.checkpointer.rebuilt:
            names = self.checkpointer.rebuilt
            info.append(("Recovered", f"the train_dir's `checkpoint` state file was missing; "
                                      f"rewritten from its files ({', '.join(names)}), so the "
                                      f"run resumes from {names[-1]} instead of starting over"))
        return info

    def release(self):
        """Frees the train_dir's lock (the run's end); safe to call twice."""
        if self.lock is not None:
            self.lock.release()


def resume(plan, handles, write=print):
    """The run's resume (see above) from its plan (towertrain.plan.RunPlan) and
    handles (towertrain.engine.run.handles.RunHandles); returns a Resumed.
    Raises CheckpointError, before any step, when the run may not go on."""
    out = plan.outputs
    if not plan.topology.is_chief:
        return _resume_worker(plan, handles, write)  # multi-worker: the chief writes
    if not out.train_dir:
        _agree_on_resume(plan, None, None)
        return Resumed()
    checkpointer = Checkpointer(handles, plan, out.train_dir, out.max_ckpts_to_keep)
    checkpointer.check_free_space()  # a disk that cannot hold one: refused now
    # One training run per train_dir: held until the saver's close (or the
    # process's end), released at once if this run is refused below.
    lock = train_dir_lock.acquire(out.train_dir)
    try:
        return _resume_chief(plan, handles, Resumed(checkpointer, lock))
    except BaseException:
        lock.release()
        raise


def _resume_chief(plan, handles, resumed):
    """The chief's train_dir checkpoint restored once the run record agrees
    with this run and the disk has room; then the record is rewritten for
    this run."""
    out, checkpointer = plan.outputs, resumed.checkpointer
    # Under the lock, so no save of another run is under way there.
    resumed.removed = leftovers.remove_unfinished_saves(out.train_dir)
    record, where = run_record.read(out.train_dir), f"--train_dir={out.train_dir}"
    # Another model's run: say so, instead of listing every missing variable.
    model = handles.model.name if handles.user_model else plan.model
    run_record.check(record, {"model": model, "data_name": plan.dataset,
                              run_record.USER_MODEL: handles.user_model}, where)
    recipe = plan.recipe
    state = run_record.plan_state_settings(plan)
    compared = run_record.compared_values(
        (plan.input, plan.exchange, recipe.clipping), plan.input.seed)
    changeable = {"accumulation_steps": plan.batches.accumulation_steps,
                  "total_steps": plan.steps.total}
    input_record = run_record.training_input(plan.input.data_name, plan.input.data_dir,
                                             handles.input.num_examples)
    chosen = ckpt_lib.resolve(checkpoint_path=out.checkpoint) if out.checkpoint else None
    if chosen:  # a branch from an earlier step goes to a new folder
        branch.check_no_later_checkpoints(chosen, out.train_dir)
    resuming_from = chosen or checkpointer.manager.latest_checkpoint
    if resuming_from:  # a resume: the same state's meaning
        contract.check_state_settings(record, state, where)
        # No record says the optimizer: the checkpoint's own slots do, once
        # its files and model variables are this model's (else that is said).
        if "optimizer" not in record:
            ckpt_lib.check_matches(resuming_from, checkpointer.state.variables)
        contract.check_optimizer_witness(
            record, resuming_from,
            {name for slots in checkpointer.state.slots.values() for name in slots},
            recipe.optimizer.optimizer, where)
        # ... and the same input: the checkpoint holds the position in it.
        contract.check_training_input(record, input_record, plan.input.data_dir, where)
        resumed.resume_changes = contract.changes_at_resume(record, changeable) + \
            contract.compared_changes(record, compared) + \
            contract.learning_rate_change(record, lr_source.record_entry(handles.learning_rate))
    resumed.restore(chosen)
    _agree_on_resume(plan, out.train_dir, resumed.resumed_from)  # before the record changes
    # A resume keeps the record's pick of --gradient_pack_mb=auto (a fresh start times again).
    kept = run_record.pack_pick(record) if resumed.resumed_from else {}
    resumed.pack_pick = kept.get(run_record.PACK_PICK, {}).get("pack_mb")
    topology = run_record.topology_entry(plan.batches, plan.topology.num_workers,
                                         plan.topology.num_towers)
    run_record.write(out.train_dir, run_record.record_of(
        plan.model, plan.dataset, plan.topology.data_format, handles.model,
        state, changeable, data_dir=plan.input.data_dir, user_model=handles.user_model,
        input_record=input_record, compared=compared, pack_pick=kept,
        learning_rate=lr_source.record_entry(handles.learning_rate),
        topology=run_record.topology_history(
            record, topology, checkpointer.last_saved_step if resumed.resumed_from else None)))
    return resumed


def _resume_worker(plan, handles, write):
    """A non-chief worker of a multi-worker run: resumes from the chief's latest
    checkpoint in the shared --train_dir, never saves and prints one line."""
    out = plan.outputs
    write(f"worker {resolvers.describe(plan.topology.cluster)}: training; the chief "
          "(task 0) writes the output and checkpoints")
    path = None
    if out.train_dir:
        chosen = ckpt_lib.resolve(checkpoint_path=out.checkpoint) if out.checkpoint else None
        path = Checkpointer(handles, plan, out.train_dir, out.max_ckpts_to_keep,
                            writer=False).restore_latest(chosen)
    _agree_on_resume(plan, out.train_dir, path)
    if path:
        write(f"resumed from the chief's checkpoint {path}")
    return Resumed(resumed_from=path)


def _agree_on_resume(plan, train_dir, path):
    """Multi-worker: every worker restored the same checkpoint (`path`), or
    every one stops here, before any step (agreement.py)."""
    if plan.topology.num_workers > 1:
        agreement.agree(plan.topology.cluster, train_dir, path,
                        cluster_lib.collective_timeout())
