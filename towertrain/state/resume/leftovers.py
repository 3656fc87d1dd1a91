"""What earlier runs left in a train_dir, put right under its lock before a
resume reads it: the `ckpt-N_temp/` folders of saves a killed process never
finished, and a lost `checkpoint` state file, rewritten from the ckpt-N files.
"""
import os
import re

import tensorflow as tf

from towertrain.state.checkpoint import STATE_FILE, checkpoints_on_disk


def rebuild_state_file(train_dir):
    """A train_dir whose `checkpoint` state file is gone (deleted, or the
    ckpt-N files copied without it) but whose ckpt-N files remain: without the
    file a run would start over at step 1 and save over them, so it is
    written again, listing them in step order (the latest resumes). Returns
    the names it lists; [] when nothing was missing."""
    if not train_dir or tf.io.gfile.exists(os.path.join(train_dir, STATE_FILE)):
        return []
    found = checkpoints_on_disk(train_dir)
    if found:
        # The CheckpointState text proto, relative names (the folder may move);
        # TensorFlow's writer of it is deprecated and logs so.
        # Each one's time (its index file's) after last_preserved_timestamp, so
        # the manager keeps counting them against --max_ckpts_to_keep.
        names = [os.path.basename(path) for path in found]
        times = [tf.io.gfile.stat(path + ".index").mtime_nsec / 1e9 for path in found]
        text = (f'model_checkpoint_path: "{names[-1]}"\n'
                + "".join(f'all_model_checkpoint_paths: "{name}"\n' for name in names)
                + "".join(f"all_model_checkpoint_timestamps: {t!r}\n" for t in times)
                + f"last_preserved_timestamp: {min(times) - 1!r}\n")
        path = os.path.join(train_dir, STATE_FILE)
        with tf.io.gfile.GFile(path + ".tmp", "w") as f:
            f.write(text)
        tf.io.gfile.rename(path + ".tmp", path, overwrite=True)
    return [os.path.basename(path) for path in found]


_TEMPORARY = re.compile(r"^ckpt-\d+_temp$")


def remove_unfinished_saves(train_dir):
    """Removes the `ckpt-N_temp/` folders of saves a killed process never
    finished (TensorFlow writes a checkpoint there, then moves it into
    place); only the run holding the train_dir's lock may call it. Returns
    their names."""
    if not train_dir or not tf.io.gfile.isdir(train_dir):
        return []
    found = sorted(name.rstrip("/") for name in tf.io.gfile.listdir(train_dir)
                   if _TEMPORARY.match(name.rstrip("/")))
    for name in found:
        tf.io.gfile.rmtree(os.path.join(train_dir, name))
    return found
