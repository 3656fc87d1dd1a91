"""Portable checkpoints: one copy of the model whatever the mode.

A checkpoint holds
  model/<key>   every model variable (trainable and not), tower 0's copy,
  slots/<key>/<slot>   the optimizer slots of that variable (momentum, ...),
  step          the number of updates applied (drives LR schedules),
  input         the input iterator's position, where the input has one,
where <key> is the variable's path inside the model ('conv1/kernel' ->
'conv1__kernel'). Nothing depends on the variable-update mode, the number or
type of devices or the data format, so any run restores into any other.
Layers need explicit names for keys to match across processes (Keras'
automatic names depend on how many layers a process built before).
"""
import os
import re
import tempfile

import tensorflow as tf

from towertrain import private_api
from towertrain import tf_errors
from towertrain.errors import CheckpointError  # noqa: F401 - raised here

_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"



def variable_key(model, variable, seed_state_paths=None):
    """The mode-independent key of a model variable: its path minus the model name.

    A seed generator's state is keyed by the layer owning it: Keras names the
    generator by how many this process built before ('seed_generator_7'), which
    would make the key depend on unrelated code.
    """
    path = (seed_state_paths or {}).get(id(variable), variable.path)
    prefix = model.name + "/"
    if path.startswith(prefix):
        path = path[len(prefix):]
    return path.replace("/", "__")


def seed_state_paths(model):
    """{id(seed state variable): '<owning layer path>/<attribute>_state'}."""
    return {id(generator.state): f"{owner}/{attribute}_state"
            for owner, attribute, generator in private_api.seed_generators(model)}


def model_variable_dict(model, trainable=None, non_trainable=None):
    """{key: variable} pairing the model's variables (for keys) with `trainable` and
    `non_trainable` (the engine's copies, same order); default: the model's own."""
    templates = list(model.trainable_variables) + list(model.non_trainable_variables)
    if trainable is None:
        values = templates
    else:
        values = list(trainable) + list(non_trainable)
    seed_paths = seed_state_paths(model)
    out = {}
    for template, variable in zip(templates, values):
        key = variable_key(model, template, seed_paths)
        if key in out:
            raise CheckpointError(f"two model variables share the key {key!r}; give the "
                                  "model's layers unique names")
        out[key] = variable
    return out


def optimizer_slots(optimizer):
    """{id(model variable): {slot name: slot variable}} for a built Keras optimizer.

    Keras names a slot '<variable path with _>_<slot>' (add_variable_from_reference);
    the longest matching variable prefix wins so 'a_b' never steals 'a_b_c's slots.
    """
    prefixes = sorted(((v.path.replace("/", "_") + "_", v) for v in
                       private_api.optimizer_variables(optimizer)), key=lambda p: -len(p[0]))
    skip = {id(optimizer.iterations)}
    learning_rate = private_api.optimizer_learning_rate(optimizer)
    if isinstance(learning_rate, tf.Variable) or hasattr(learning_rate, "path"):
        skip.add(id(learning_rate))
    slots = {id(v): {} for _, v in prefixes}
    for slot in optimizer.variables:
        if id(slot) in skip:
            continue
        for prefix, variable in prefixes:
            if slot.name.startswith(prefix):
                slots[id(variable)][slot.name[len(prefix):]] = slot
                break
    return slots


class EngineState:
    """The savable view of a trainer's variable manager (and input position)."""

    def __init__(self, model, manager, input_source=None, engine_variables=None):
        """engine_variables: {name: variable} of engine state beyond the model
        (the fp16 loss scale), saved under 'engine/'."""
        self.model = model
        self.engine = dict(engine_variables or {})
        self.manager = manager
        trainable, non_trainable = manager.primary_variables()
        self.variables = model_variable_dict(model, trainable, non_trainable)
        # Every copy of every variable -> its key, so slots of any copy can be found.
        self._key_of = {}
        for copy in self._copies():
            for key, variable in model_variable_dict(model, *copy).items():
                self._key_of[id(variable)] = key
        primary_ids = {id(v) for v in self.variables.values()}
        self.slots = {}
        for optimizer in manager.optimizers():
            by_variable = optimizer_slots(optimizer)
            for variable in private_api.optimizer_variables(optimizer):
                if id(variable) in primary_ids and by_variable[id(variable)]:
                    self.slots[self._key_of[id(variable)]] = dict(by_variable[id(variable)])
        self.step = manager.iterations()
        self.input = input_source.checkpoint_state() if input_source is not None else None

    def _copies(self):
        return list(zip(self.manager.trainable_copies(), self.manager.non_trainable_copies()))

    def checkpoint(self, with_input=True):
        objects = dict(model=self.variables, slots=self.slots, step=self.step)
        if self.engine:
            objects["engine"] = self.engine
        if with_input and self.input is not None:
            objects["input"] = self.input
        return tf.train.Checkpoint(**objects)

    def global_step(self):
        return int(self.step.numpy())

    def sync_copies(self):
        """Writes the primary copy (just restored) into every other copy, its
        optimizer slots and every optimizer's step, so replicas stay identical."""
        step = self.step.numpy()
        primary = self.variables
        for copy in self._copies():
            for key, variable in model_variable_dict(self.model, *copy).items():
                if variable is not primary[key]:
                    variable.assign(primary[key])
        for optimizer in self.manager.optimizers():
            optimizer.iterations.assign(step)
            for variable_id, slots in optimizer_slots(optimizer).items():
                source = self.slots.get(self._key_of[variable_id], {})
                for name, slot in slots.items():
                    if name in source and slot is not source[name]:
                        slot.assign(source[name])
        self.manager.sync_engine_copies()


def check_matches(path, expected_variables):
    """Raises CheckpointError listing missing/unexpected/mis-shaped model variables."""
    if not tf.io.gfile.exists(path + ".index"):
        # A `checkpoint` state file an earlier run left, naming files since deleted.
        state = os.path.join(os.path.dirname(path), "checkpoint")
        raise CheckpointError(
            f"{state} names the checkpoint {path}, but {path}.index does not exist; restore "
            f"its files to resume from it, or delete {state} to start from the initial "
            "values")
    try:
        stored = dict(tf.train.list_variables(path))
    except (tf.errors.OpError, ValueError) as err:
        raise CheckpointError(f"cannot read checkpoint {path}: {first_line(err)}") from err
    saved = {name[len("model/"):-len(_VALUE_SUFFIX)]: shape for name, shape in stored.items()
             if name.startswith("model/") and name.endswith(_VALUE_SUFFIX)}
    missing = sorted(set(expected_variables) - set(saved))
    unexpected = sorted(set(saved) - set(expected_variables))
    mismatched = sorted(f"{k} (checkpoint {saved[k]}, model {list(v.shape)})"
                        for k, v in expected_variables.items()
                        if k in saved and list(saved[k]) != list(v.shape))
    if missing or unexpected or mismatched:
        parts = [f"checkpoint {path} does not match the model"]
        if missing:
            parts.append(f"missing variables: {', '.join(missing)}")
        if unexpected:
            parts.append(f"unexpected variables: {', '.join(unexpected)}")
        if mismatched:
            parts.append(f"shape mismatches: {', '.join(mismatched)}")
        raise CheckpointError("; ".join(parts))


def check_whole(path):
    """Reads every tensor of checkpoint `path` (TensorFlow checks each one's
    checksum); raises CheckpointError naming the damage and an earlier
    checkpoint beside it that reads whole. Before the restore proper, whose
    failure also leaked TensorFlow's warnings about unrestored values."""
    reason = _damage(path)
    if reason is None:
        return
    earlier = [p for p in reversed(checkpoints_on_disk(os.path.dirname(path)))
               if _step_of(p) is not None and _step_of(p) < (_step_of(path) or 0)]
    whole = next((p for p in earlier if _damage(p) is None), None)
    offer = (f"resume from the earlier checkpoint {whole}, which reads whole: the same command "
             f"with --checkpoint={whole}" if whole else
             "no earlier checkpoint beside it reads whole")
    raise CheckpointError(f"checkpoint {path} is damaged ({reason}); nothing was changed: "
                          f"{offer}, or put back a copy of its files")


def _step_of(path):
    found = re.search(r"ckpt-(\d+)$", path)
    return int(found.group(1)) if found else None


def damaged(path):
    """Whether checkpoint `path` cannot be read whole."""
    return _damage(path) is not None


def _damage(path):
    """Why checkpoint `path` cannot be read whole, or None."""
    try:
        reader = tf.train.load_checkpoint(path)
        for name, dtype in reader.get_variable_to_dtype_map().items():
            if dtype != tf.variant:  # an input's iterator state: not readable as numpy
                reader.get_tensor(name)
    except (tf.errors.OpError, ValueError, IndexError) as err:
        text = tf_errors.OP_SUFFIX.sub("", tf_errors.FUNCTION_NODE.sub("", first_line(err)))
        if tf_errors.CHECKSUM_MISMATCH in text:
            return f"a data file fails its checksum: {tf_errors.CHECKSUM_MISMATCH}"
        return text.rsplit("): ", 1)[-1]
    return None


def restore(checkpoint, path, expected_variables):
    """Checks the names and the bytes, then reads `path` into `checkpoint`."""
    check_matches(path, expected_variables)
    check_whole(path)
    try:
        # Model variables were checked above; slots or input missing from the
        # checkpoint (another optimizer, synthetic data) keep their fresh values.
        checkpoint.read(path).expect_partial()
    except (tf.errors.OpError, ValueError, IndexError) as err:  # IndexError: short file
        raise CheckpointError(f"cannot read checkpoint {path} (truncated or corrupt?): "
                              f"{first_line(err)}") from err


def save_portable(model, manager, path, engine_variables=None):
    """Writes the model, optimizer slots, global step and engine variables
    (no input position) to the checkpoint prefix `path`; returns the written path."""
    state = EngineState(model, manager, engine_variables=engine_variables)
    return state.checkpoint(with_input=False).write(path)


def restore_portable(model, manager, path, engine_variables=None):
    """Reads the checkpoint `path` (no input position) into the manager's
    primary copy, then every other copy and optimizer; returns its global step.
    The Keras model itself is not written (the trainer's sync_model does)."""
    state = EngineState(model, manager, engine_variables=engine_variables)
    restore(state.checkpoint(with_input=False), path, state.variables)
    state.sync_copies()
    return state.global_step()


_CHECKPOINT_INDEX = re.compile(r"^ckpt-(\d+)\.index$")
STATE_FILE = "checkpoint"  # tf.train.CheckpointManager's list of its checkpoints


def checkpoints_on_disk(train_dir):
    """The complete ckpt-N prefixes (an index and a data file) in train_dir,
    in step order, whatever its `checkpoint` state file says."""
    if not train_dir or not tf.io.gfile.isdir(train_dir):
        return []
    names = set(tf.io.gfile.listdir(train_dir))
    steps = sorted(int(m.group(1)) for m in map(_CHECKPOINT_INDEX.match, names) if m)
    return [os.path.join(train_dir, f"ckpt-{step}") for step in steps
            if any(name.startswith(f"ckpt-{step}.data-") for name in names)]


def latest(train_dir):
    """The latest checkpoint of train_dir: its state file's, else (the file
    lost) the last complete ckpt-N on disk; None when there is none."""
    found = tf.train.latest_checkpoint(train_dir) if train_dir else None
    if found:
        return found
    on_disk = checkpoints_on_disk(train_dir)
    return on_disk[-1] if on_disk else None


def resolve(train_dir=None, checkpoint_path=None):
    """The checkpoint to read: `checkpoint_path`, else the latest in train_dir."""
    if checkpoint_path:
        if tf.io.gfile.isdir(checkpoint_path):
            found = latest(checkpoint_path)
            if not found:
                raise CheckpointError(f"no checkpoint in {checkpoint_path}")
            return found
        if not tf.io.gfile.exists(checkpoint_path + ".index"):
            raise CheckpointError(f"no checkpoint at {checkpoint_path} "
                                  f"({checkpoint_path}.index does not exist)")
        return checkpoint_path
    if not train_dir:
        raise CheckpointError("need --train_dir or --checkpoint to find a checkpoint")
    found = latest(train_dir)
    if not found:
        raise CheckpointError(f"no checkpoint in --train_dir={train_dir}")
    return found


def ensure_writable(train_dir):
    """Creates train_dir and proves a file can be written there, before any training."""
    try:
        os.makedirs(train_dir, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=train_dir, prefix=".write_test"):
            pass
    except OSError as err:
        raise CheckpointError(f"--train_dir={train_dir}: not writable ({err.strerror or err})"
                              ) from err


def save_failed(step, train_dir, err, kept):
    """The CheckpointError of a save of `step` that failed with `err`; `kept`:
    the latest checkpoint, which the failure left as it was (or None)."""
    return CheckpointError(
        f"saving the checkpoint of step {step} in --train_dir={train_dir} failed "
        f"({_write_error_reason(err)}); "
        + (f"the previous checkpoint {kept} is kept and a resume starts there" if kept
           else "no earlier checkpoint exists")
        + "; free space (or fix the path) and run the same command again")


def _write_error_reason(err):
    """'No space left on device' out of TensorFlow's '{{function_node ...}}
    <temporary file>; No space left on device [Op:SaveV2]' (an OSError's strerror)."""
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    text = tf_errors.OP_SUFFIX.sub("", tf_errors.FUNCTION_NODE.sub("", first_line(err)))
    return text.rsplit("; ", 1)[-1]


def check_free_space(train_dir, needed, free):
    """Refuses a train_dir whose disk (`free` bytes) cannot hold one more
    checkpoint (`needed` bytes), before the first step: a full disk at the
    end would lose the whole run."""
    if free < needed:
        raise CheckpointError(
            f"--train_dir={train_dir}: {_size(free)} free on its disk, but a checkpoint of "
            f"this run needs about {_size(needed)}; free some space or use another "
            "--train_dir (checked before training, nothing was trained)")


def _size(num_bytes):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if num_bytes < 1024 or unit == "GiB":
            return f"{num_bytes:.0f} {unit}" if unit == "bytes" else f"{num_bytes:.1f} {unit}"
        num_bytes /= 1024


def first_line(err):
    text = getattr(err, "message", None) or str(err)
    return text.strip().splitlines()[0] if text.strip() else type(err).__name__
