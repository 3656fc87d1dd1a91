"""The run's contract at a resume: what the train_dir's run record
(towertrain.state.run_record) lets change and what it refuses.

Refused, before any step: a setting that shaped the saved state
(run_record.STATE_SETTINGS: the optimizer and its options, the precision, the
decay) and another training input (the checkpoint holds the position in it).
Allowed by design and reported in the header: run_record.CHANGEABLE
(accumulation steps, the run's last step). The model and dataset are the
record's recorded flags (run_record.check), the same check --eval makes.
"""
from towertrain.errors import CheckpointError
from towertrain.state import run_record


def _flag(name, value):
    if isinstance(value, bool):
        return f"--{name}" if value else f"--no{name}"
    return f"--{name}={value}"


def check_state_settings(record, current, where):
    """Raises CheckpointError at the first STATE_SETTINGS value of `current`
    (state_settings of the resuming run) that differs from the record's.
    A record without a setting (written before it was recorded, or where it
    does not apply) is not checked for it."""
    for name in run_record.STATE_SETTINGS:
        if name not in record or name not in current or record[name] == current[name]:
            continue
        recorded, value = record[name], current[name]
        raise CheckpointError(
            f"{_flag(name, value)} but {where} was trained with {_flag(name, recorded)}, "
            "which shaped its saved state (a resume would load it and train on as another "
            f"run); pass {_flag(name, recorded)} to resume that run, or use another "
            "--train_dir to start a new one")


def changes_at_resume(record, current):
    """[(label, text)] header lines for each CHANGEABLE value of `current` that
    differs from the record's (a resume may change them by design)."""
    labels = {"accumulation_steps": ("Accumulation", "--gradient_accumulation_steps"),
              "total_steps": ("Total steps", "the run's last step")}
    lines = []
    for name in run_record.CHANGEABLE:
        if name in record and name in current and record[name] != current[name]:
            label, what = labels[name]
            lines.append((label, f"CHANGED at resume: {what} was {record[name]} in the run "
                                 f"record, now {current[name]}"))
    return lines


def _examples_text(count):
    return "an unknown number of" if count is None else f"{count:,}"


def _files_text(names):
    if len(names) <= 5:
        return ", ".join(names)
    return f"{len(names)} files, {names[0]} .. {names[-1]}"


def check_training_input(record, current, data_dir, where):
    """Refuses a resume on another training input than the record's (`current`:
    training_input of the resuming run): more or fewer examples per epoch, or
    other files. A record without it (older, or synthetic data) is not checked."""
    if "input_files" not in record or not current:
        return
    before, now = (record.get("input_examples"), record["input_files"]), (
        current["input_examples"], current["input_files"])
    if before == now:
        return
    missing = [n for n in before[1] if n not in now[1]]
    added = [n for n in now[1] if n not in before[1]]
    changes = "; ".join(filter(None, (
        f"missing now: {_files_text(missing)}" if missing else "",
        f"new: {_files_text(added)}" if added else "")))
    raise CheckpointError(
        f"--data_dir={data_dir} holds {_examples_text(now[0])} training examples per epoch "
        f"({_files_text(now[1])}) but {where} was trained on {_examples_text(before[0])} "
        f"({_files_text(before[1])}{'; ' + changes if changes else ''}), and its checkpoint "
        "holds the position in that input; restore the files it was trained on to resume "
        "that run, or use another --train_dir to start a new one on these files")


def learning_rate_change(record, entry):
    """[(label, text)]: a header line when the rates of the resuming run's
    learning-rate entry (source.record_entry) differ from the record's. A
    model's recipe scales its rate with the exchange and the devices, as
    tf_cnn_benchmarks does (2 replicated devices: x 2), so a resume on another
    topology at the same global batch can train at another rate; said here,
    never silent. A record without the rates (older) is not compared."""
    recorded = record.get("learning_rate")
    if not isinstance(recorded, dict) or "values" not in recorded:
        return []
    if [float(v) for v in recorded["values"]] == entry["values"]:
        return []
    why = (" (the model's recipe scales its rate with the exchange and the devices, as "
           "tf_cnn_benchmarks does; give --init_learning_rate or "
           "--piecewise_learning_rate_schedule to set the rate yourself)"
           if entry.get("source") == "recipe" else "")
    before = ", ".join(f"{float(v):g}" for v in recorded["values"])
    now = ", ".join(f"{v:g}" for v in entry["values"])
    return [("Learning rate", f"CHANGED at resume: {before} in the run record, now {now}"
                              f"{why}")]


def compared_changes(record, current):
    """[(label, text)]: one header line naming every COMPARED_SETTINGS value of
    `current` (run_record.compared_values) that differs from the record's: the
    run goes on from the checkpoint, but not as the run it was (a resume
    without --distortions trains on unaugmented examples). A record without
    a setting (older) is not compared for it."""
    changed = [f"{_flag(name, record[name])} in the run record, now "
               f"{_flag(name, current[name])}"
               for name in run_record.COMPARED_SETTINGS
               if name in record and name in current and record[name] != current[name]]
    if not changed:
        return []
    return [("Settings", f"CHANGED at resume: {'; '.join(changed)}; from here it trains "
                         "as another run would (pass the recorded values to go on as it was)")]


def saved_slot_names(path):
    """The optimizer slot names (momentum, velocity, ...) checkpoint `path`
    holds: its own witness of the optimizer it was trained with."""
    import tensorflow as tf  # deferred: the record's checks import no TensorFlow
    return {name.split("/")[2] for name, _ in tf.train.list_variables(path)
            if name.startswith("slots/") and name.count("/") >= 2}


def check_optimizer_witness(record, path, slot_names, optimizer, where):
    """Where the run record does not say the optimizer (missing, or from before
    it was recorded), the checkpoint's own slots speak: a resume whose
    optimizer keeps other slots (`slot_names`: adam's momentum and velocity)
    than `path` holds (none: an sgd run) is refused, since the restore would
    start them fresh and train on as another run."""
    if "optimizer" in record:
        return
    saved = saved_slot_names(path)
    if saved == set(slot_names):
        return
    held = ", ".join(sorted(saved)) or "none"
    needed = ", ".join(sorted(slot_names)) or "none"
    raise CheckpointError(
        f"--optimizer={optimizer} keeps optimizer slots {needed}, but {path} holds "
        f"{held} and {where} has no run record ({run_record.RUN_INFO_FILE}) that says what "
        "it was trained with; pass the optimizer it was trained with (slots none: "
        "--optimizer=sgd; momentum: --optimizer=momentum), or use another --train_dir "
        "to start a new run")
