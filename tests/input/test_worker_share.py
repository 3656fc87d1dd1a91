"""Each worker of a multi-worker run decodes only its share of every global
batch: its towers' rows, each decoded and augmented exactly as in the whole
batch (the same seed pair: epoch key and position), so worker k's rows equal
rows start..end of the global batch one process would make. Decodes are
counted in the decode function itself (a host callback per call), not timed.

The end-to-end claim (2 workers x 1 device equal 1 process x 2 devices on
CIFAR files, each worker decoding half) is tests/cluster's, with this split."""
import numpy as np
import pytest
import tensorflow as tf

from towertrain.input_pipeline import cifar10, imagenet
from towertrain.input_pipeline.slicing import WorkerShare, split_sizes

from helpers import cifar_files
from helpers.data_files import imagenet_dir  # noqa: F401 - fixture

GLOBAL_BATCH = 6


def _counting(module, name, monkeypatch):
    """Wraps module.name (a function of one record) so every call made while a
    dataset runs adds 1 to the returned list's first entry."""
    real, calls = getattr(module, name), [0]

    def tick():
        calls[0] += 1
        return np.int32(0)

    def counted(*args, **kwargs):
        out = real(*args, **kwargs)
        with tf.control_dependencies([tf.numpy_function(tick, [], tf.int32)]):
            return tf.nest.map_structure(tf.identity, out)
    monkeypatch.setattr(module, name, counted)
    return calls


def _batches(input_source):
    return [(images.numpy(), labels.numpy()) for images, labels in input_source.dataset]


def _expected_rows(batch, share):
    sizes = split_sizes(batch, share.num_towers)
    start = sum(sizes[:share.first_tower])
    return start, start + sum(sizes[share.first_tower:share.first_tower + share.towers_per_worker])


def _check_shares(make, decode_calls, num_examples, workers, towers):
    decode_calls[0] = 0
    whole = _batches(make(None))
    assert decode_calls[0] == num_examples
    decoded = 0
    for task in range(workers):
        share = WorkerShare(workers, task, towers)
        decode_calls[0] = 0
        mine = _batches(make(share))
        assert len(mine) == len(whole)  # one batch per step, an empty share included
        for (images, labels), (all_images, all_labels) in zip(mine, whole):
            start, end = _expected_rows(len(all_labels), share)
            np.testing.assert_array_equal(labels, all_labels[start:end])
            np.testing.assert_array_equal(images, all_images[start:end])
        rows = sum(len(labels) for _, labels in mine)
        assert decode_calls[0] == rows  # decoded its rows, and nothing else
        decoded += rows
    assert decoded == num_examples  # every example decoded once across the cluster


@pytest.mark.parametrize("workers,towers", [(2, 1), (2, 2), (3, 1)])
def test_cifar_workers_decode_only_their_rows(tmp_path, monkeypatch, workers, towers):
    data_dir = str(tmp_path / "cifar")
    cifar_files.write_dataset(data_dir, 20, 2)  # 3 batches of 6 and one of 2
    calls = _counting(cifar10, "decode", monkeypatch)

    def make(share):
        return cifar10.dataset_input(data_dir, GLOBAL_BATCH, num_epochs=1, seed=3,
                                     distortions=True, share=share)
    _check_shares(make, calls, 20, workers, towers)


def test_imagenet_workers_decode_only_their_rows(imagenet_dir, monkeypatch):  # noqa: F811
    calls = _counting(imagenet, "parse", monkeypatch)

    def make(share):
        return imagenet.dataset_input(str(imagenet_dir), 4, image_size=16, num_classes=5,
                                      num_epochs=1, seed=3, distortions=True, share=share)
    _check_shares(make, calls, 10, 2, 2)


def test_a_share_of_an_uneven_batch_is_the_split_of_one_process():
    # split_sizes(6, 4) = [2, 2, 1, 1]; split_sizes(2, 4) = [1, 1, 0, 0].
    rows = {(task, batch): tuple(int(x) for x in WorkerShare(2, task, 2).rows(tf.constant(batch)))
            for task in (0, 1) for batch in (6, 2)}
    assert rows == {(0, 6): (0, 4), (1, 6): (4, 6), (0, 2): (0, 2), (1, 2): (2, 2)}
    assert WorkerShare(2, 1, 2).describe() == "towers 2-3 of 4"
    assert WorkerShare(2, 1, 1).describe() == "tower 1 of 2"


@pytest.mark.parametrize("share", [None, WorkerShare(2, 1, 1)])
def test_a_file_reader_restarts_at_any_batch_without_decoding_what_it_skips(
        tmp_path, monkeypatch, share):
    """A resume rebuilds the reader at the step's batch (its position is not in
    checkpoints, so any topology's checkpoint serves any other): the batches
    from there equal the uninterrupted stream's, across an epoch end, and the
    skipped examples are read but never decoded."""
    data_dir = str(tmp_path / "cifar")
    cifar_files.write_dataset(data_dir, 20, 2)  # 4 batches an epoch: 6, 6, 6, 2
    calls = _counting(cifar10, "decode", monkeypatch)
    reader = cifar10.dataset_input(data_dir, GLOBAL_BATCH, num_epochs=2, seed=3,
                                   distortions=True, share=share)
    whole = _batches(reader)
    reader.create(["/cpu:0"])
    assert reader.checkpoint_state() is None  # no iterator state in checkpoints
    for start in (1, 3, 4, 6):
        calls[0] = 0
        restarted = [(i.numpy(), l.numpy()) for i, l in reader.restart_fn(start)]
        assert len(restarted) == len(whole) - start
        for (images, labels), (want_images, want_labels) in zip(restarted, whole[start:]):
            np.testing.assert_array_equal(labels, want_labels)
            np.testing.assert_array_equal(images, want_images)
        assert calls[0] == sum(len(labels) for _, labels in restarted), start


def test_resume_after_sets_where_the_iterator_starts(tmp_path):
    """Through the door the run uses: create, resume_after, then the batches."""
    data_dir = str(tmp_path / "cifar")
    cifar_files.write_dataset(data_dir, 20, 2)
    whole = _batches(cifar10.dataset_input(data_dir, GLOBAL_BATCH, num_epochs=2, seed=3))
    reader = cifar10.dataset_input(data_dir, GLOBAL_BATCH, num_epochs=2, seed=3)
    reader.create(["/cpu:0"])
    reader.resume_after(5)
    for want_images, want_labels in whole[5:7]:
        (images, labels), = reader.tower_batches(["/cpu:0"])
        np.testing.assert_array_equal(labels.numpy(), want_labels)
        np.testing.assert_array_equal(images.numpy(), want_images)


def test_the_queue_input_is_refused_with_several_workers(tmp_path):
    from towertrain import Params, Trainer
    from towertrain.errors import InputError
    from towertrain.engine.exchange import graph_facts as collective_graph
    from towertrain.plan import cluster as plan_cluster
    data_dir = str(tmp_path / "cifar")
    cifar_files.write_dataset(data_dir, 20, 2)
    params = Params(model="trivial", device="cpu", num_gpus=1, input="queue",
                    data_dir=data_dir, variable_update="collective_all_reduce",
                    worker_hosts="127.0.0.1:1,127.0.0.1:2")
    with collective_graph.stand_in_cluster(plan_cluster.resolve(params)):
        with pytest.raises(InputError, match=r"^--input=queue: not with 2 workers: its feeder "
                           r"augments one epoch's examples from one random stream in order"):
            Trainer(params, check_devices=False)
