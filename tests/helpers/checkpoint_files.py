"""Reading a train_dir's checkpoint state without TensorFlow."""
import os
import re


def latest_step(train_dir):
    """The step of the latest complete checkpoint, read without TensorFlow."""
    try:
        with open(os.path.join(train_dir, "checkpoint")) as f:
            found = re.search(r'^model_checkpoint_path: ".*ckpt-(\d+)"', f.read(), re.M)
    except FileNotFoundError:
        return 0
    return int(found.group(1)) if found else 0


def committed_steps(train_dir):
    """The steps of the checkpoints the train_dir's state file names, in order.

    A checkpoint's files are written before the state file names it, so a
    process killed between the two leaves a ckpt-N.index that no resume will
    use; a test that waits for a checkpoint and then kills must wait for this
    list, not for the files."""
    try:
        with open(os.path.join(train_dir, "checkpoint")) as f:
            text = f.read()
    except FileNotFoundError:
        return []
    return sorted(int(step) for step in
                  re.findall(r'^all_model_checkpoint_paths: ".*ckpt-(\d+)"', text, re.M))


def files_of(directory, prefix=""):
    """{name: bytes} of the files in `directory` whose names start with
    `prefix`, but the train_dir lock (which holds the pid of the last run
    that took it): compared before and after a refused or failed run. A
    folder (a checkpoint being written when its run was stopped:
    ckpt-N_temp/) counts by the files in it, as name/inner name."""
    from towertrain.state.resume import train_dir_lock
    out = {}
    for name in sorted(set(os.listdir(directory)) - {train_dir_lock.LOCK_FILE}):
        if not name.startswith(prefix):
            continue
        path = os.path.join(directory, name)
        if os.path.isdir(path):
            for inner, data in files_of(path).items():
                out[f"{name}/{inner}"] = data
            continue
        with open(path, "rb") as f:
            out[name] = f.read()
    return out


def saved_tensors(path):
    """The model variables, optimizer slots and step of the checkpoint at
    `path` (a train_dir: its latest; or a checkpoint prefix)."""
    import tensorflow as tf
    reader = tf.train.load_checkpoint(path)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith(("model/", "slots/", "step"))}
