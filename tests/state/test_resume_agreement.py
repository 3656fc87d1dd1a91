"""Workers resume from one checkpoint or none trains: what each worker
restored (its --train_dir, the step, a checksum of the index file) is
summed across the workers and every one compares the rows. The collective
is replaced by the sum of the workers' own vectors (what it computes), so
three workers run in one process."""
import os
import shutil
import zlib

import numpy as np
import pytest
import tensorflow as tf

from towertrain.config.cluster_spec import Cluster
from towertrain.errors import CheckpointError
from towertrain.state.resume import agreement

HOSTS = ("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3")


def _checkpoint(directory, step, value):
    """A ckpt-<step> of one variable holding `value` in `directory`."""
    os.makedirs(directory, exist_ok=True)
    prefix = os.path.join(directory, f"ckpt-{step}")
    tf.train.Checkpoint(v=tf.Variable([value, 2.0 * value])).write(prefix)
    return prefix


def _copy(prefix, directory):
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(os.path.dirname(prefix)):
        if name.startswith(os.path.basename(prefix) + "."):
            shutil.copy(os.path.join(os.path.dirname(prefix), name), directory)
    return os.path.join(directory, os.path.basename(prefix))


def _agree_all(monkeypatch, restored, train_dir="run"):
    """Every worker's agree() over the paths it `restored` (train_dir: one
    for all, or a list, one per worker): the error each raised (None: it
    went on)."""
    dirs = train_dir if isinstance(train_dir, list) else [train_dir] * len(restored)
    vectors = []

    def own(tensor, *args, **kwargs):
        vectors.append(tensor.numpy())
        raise StopIteration  # only this worker's vector was wanted
    monkeypatch.setattr(agreement.private_api, "collective_all_reduce", own)
    hosts = HOSTS[:len(restored)]
    for task, path in enumerate(restored):
        with pytest.raises(StopIteration):
            agreement.agree(Cluster(hosts, task_index=task), dirs[task], path, timeout=5)
    monkeypatch.setattr(agreement.private_api, "collective_all_reduce",
                        lambda tensor, *args, **kwargs: tf.constant(np.sum(vectors, axis=0)))
    errors = []
    for task, path in enumerate(restored):
        try:
            agreement.agree(Cluster(hosts, task_index=task), dirs[task], path, timeout=5)
            errors.append(None)
        except CheckpointError as error:
            errors.append(str(error))
    return errors


def _crc(prefix):
    with open(prefix + ".index", "rb") as f:
        return f"{zlib.crc32(f.read()):08x}"


def test_copies_of_one_checkpoint_agree(monkeypatch, tmp_path):
    first = _checkpoint(str(tmp_path / "a"), 8, 1.0)
    copies = [first, _copy(first, str(tmp_path / "b")), _copy(first, str(tmp_path / "c"))]
    assert _agree_all(monkeypatch, copies) == [None, None, None]


def test_another_runs_checkpoint_of_the_same_step_is_refused_on_every_worker(
        monkeypatch, tmp_path):
    """The middle worker of three holds another run's ckpt-8: the same step,
    its own bytes; only the index checksum tells them apart."""
    first = _checkpoint(str(tmp_path / "a"), 8, 1.0)
    other = _checkpoint(str(tmp_path / "b"), 8, 3.0)
    restored = [first, other, _copy(first, str(tmp_path / "c"))]
    crc, other_crc = _crc(first), _crc(other)
    assert crc != other_crc
    expected = (f"--train_dir=run: the workers would resume from different checkpoints "
                f"(task 0: ckpt-8 (index checksum {crc}); task 1: ckpt-8 (index checksum "
                f"{other_crc}); task 2: ckpt-8 (index checksum {crc})); give every worker the "
                "same --train_dir, one folder they all reach (a shared file system), so they "
                "all resume from the chief's checkpoint (nothing was trained)")
    assert _agree_all(monkeypatch, restored) == [expected] * 3


def test_different_steps_and_no_checkpoint_are_named_without_checksums(monkeypatch, tmp_path):
    first = _checkpoint(str(tmp_path / "a"), 8, 1.0)
    earlier = _checkpoint(str(tmp_path / "b"), 6, 1.0)
    errors = _agree_all(monkeypatch, [first, earlier, None])
    assert errors == [errors[0]] * 3
    assert "(task 0: ckpt-8; task 1: ckpt-6; task 2: no checkpoint in its --train_dir)" \
        in errors[0], errors[0]


def test_two_workers_on_different_checkpoints_are_refused(monkeypatch, tmp_path):
    """The smallest cluster that compares: two workers, one row each; a
    ckpt-0 is named as a checkpoint, not as none."""
    errors = _agree_all(monkeypatch, [_checkpoint(str(tmp_path / "a"), 8, 1.0),
                                      _checkpoint(str(tmp_path / "b"), 0, 1.0)])
    assert errors == [errors[0]] * 2
    assert "(task 0: ckpt-8; task 1: ckpt-0)" in errors[0], errors[0]


def test_a_worker_without_train_dir_is_named_as_such(monkeypatch, tmp_path):
    first = _checkpoint(str(tmp_path / "a"), 8, 1.0)
    errors = _agree_all(monkeypatch, [first, None, None], train_dir=["run", None, "run"])
    assert "(task 0: ckpt-8; task 1: no --train_dir; task 2: no checkpoint in its " \
        "--train_dir)" in errors[0], errors[0]
    assert all(error is not None for error in errors)  # every worker refuses


def test_the_collective_s_key_is_clear_of_every_model_s_key_space(monkeypatch, tmp_path):
    """The agreement's collective shares the workers' group with the step's
    count (cross_worker), and TensorFlow fixes an instance key's shape and
    dtype for the life of the process: its key lies above every key space a
    model's collectives take (exchange.keys: each space's keys below the
    next space's base, so all below spaces x size) and is an int32."""
    from towertrain.engine.exchange import keys
    called = []

    def capture(tensor, group_size, group_key, instance_key, **kwargs):
        called.append((group_size, group_key, instance_key))
        raise StopIteration
    monkeypatch.setattr(agreement.private_api, "collective_all_reduce", capture)
    path = _checkpoint(str(tmp_path / "a"), 8, 1.0)
    with pytest.raises(StopIteration):
        agreement.agree(Cluster(HOSTS, task_index=1), "run", path, timeout=5)
    [(group_size, group_key, instance_key)] = called
    assert (group_size, group_key) == (3, keys.WORKERS_GROUP)
    assert type(instance_key) is int
    assert keys.KEY_SPACES * keys.KEY_SPACE_SIZE <= instance_key < 2**31
