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
