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
