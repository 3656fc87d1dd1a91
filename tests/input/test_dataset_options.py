"""The --datasets_* flags: each one is really on the reader's tf.data pipeline
(read back from the dataset's own graph and options), or really changes what
the pipeline reads."""
import os

import numpy as np
import pytest
import tensorflow as tf

from helpers.cifar_files import write_dataset
from helpers.data_files import imagenet_dir  # noqa: F401 - fixture
from towertrain import Params
from helpers import plans
from towertrain.errors import ParamsError


def cifar_input(data_dir, **flags):
    params = Params(model="trivial", device="cpu", data_dir=str(data_dir), **flags)
    return plans.make_input(params, image_shape=(32, 32, 3), num_classes=10,
                            global_batch=4, dataset_name="cifar10")


def imagenet_input(data_dir, **flags):
    params = Params(model="trivial", device="cpu", data_dir=str(data_dir), **flags)
    return plans.make_input(params, image_shape=(24, 24, 3), num_classes=1000,
                            global_batch=4, dataset_name="imagenet")


def graph_nodes(dataset):
    """(node, {const name: value}) of the dataset's graph, functions included."""
    graph = tf.compat.v1.GraphDef.FromString(dataset._as_serialized_graph(
        external_state_policy=tf.data.experimental.ExternalStatePolicy.IGNORE).numpy())
    scopes = [list(graph.node)] + [list(f.node_def) for f in graph.library.function]
    found = []
    for nodes in scopes:
        consts = {n.name: tf.make_ndarray(n.attr["value"].tensor) for n in nodes
                  if n.op == "Const"}
        found += [(n, consts) for n in nodes]
    return found


def const_input(node, consts, index):
    """The value of input `index` (negative: from the end, past the captured
    arguments) of a dataset node, a constant."""
    inputs = [name for name in node.input if not name.startswith("^")]
    return int(consts[inputs[index].split(":")[0]])


@pytest.fixture
def cifar_dir(tmp_path):
    return write_dataset(str(tmp_path / "cifar"), num_train=12, num_test=4)


def test_prefetch_buffer_and_private_threads_are_on_the_dataset(cifar_dir):
    dataset = cifar_input(cifar_dir, datasets_prefetch_buffer_size=3,
                          datasets_num_private_threads=2).dataset
    assert dataset.options().threading.private_threadpool_size == 2
    prefetches = [const_input(n, c, 1) for n, c in graph_nodes(dataset)
                  if n.op == "PrefetchDataset"]
    assert prefetches == [3]
    default = cifar_input(cifar_dir).dataset
    assert default.options().threading.private_threadpool_size is None
    assert [const_input(n, c, 1) for n, c in graph_nodes(default)
            if n.op == "PrefetchDataset"] == [tf.data.AUTOTUNE]


def test_no_prefetch_leaves_the_prefetch_out(cifar_dir):
    dataset = cifar_input(cifar_dir, datasets_use_prefetch=False).dataset
    assert not [n for n, _ in graph_nodes(dataset) if n.op == "PrefetchDataset"]


def test_caching_reads_the_files_once(cifar_dir):
    """With the cache, the second epoch reads memory: deleting the files after
    the first epoch changes nothing."""
    source = cifar_input(cifar_dir, datasets_use_caching=True)
    batches = iter(source.dataset)
    first = np.concatenate([next(batches)[1].numpy() for _ in range(3)])  # 12 examples
    for name in os.listdir(cifar_dir):
        os.remove(os.path.join(cifar_dir, name))
    second = np.concatenate([next(batches)[1].numpy() for _ in range(3)])
    assert sorted(first) == sorted(second)


def test_without_caching_the_second_epoch_reads_the_files_again(cifar_dir):
    # Nothing may read ahead into the second epoch before the files are gone
    # (seen in a fresh clone: the read-ahead won the race): no final prefetch,
    # and tf.data's own injected prefetch and autotuning off.
    no_read_ahead = tf.data.Options()
    no_read_ahead.experimental_optimization.inject_prefetch = False
    no_read_ahead.autotune.enabled = False
    batches = iter(cifar_input(cifar_dir, datasets_use_prefetch=False).dataset.with_options(
        no_read_ahead))
    for _ in range(3):
        next(batches)
    for name in os.listdir(cifar_dir):
        os.remove(os.path.join(cifar_dir, name))
    with pytest.raises(tf.errors.NotFoundError):
        next(batches)


def test_repeat_cached_sample_repeats_one_record(cifar_dir):
    source = cifar_input(cifar_dir, datasets_repeat_cached_sample=True)
    batches = iter(source.dataset)
    labels = np.concatenate([next(batches)[1].numpy() for _ in range(6)])
    raw = np.fromfile(os.path.join(cifar_dir, "data_batch_1.bin"), np.uint8)
    assert set(labels) == {raw[0]}  # the first record's label, 24 times
    assert source.num_examples == 12  # epochs keep their length


def test_interleave_options_are_on_the_imagenet_pipeline(imagenet_dir):  # noqa: F811
    dataset = imagenet_input(imagenet_dir, datasets_parallel_interleave_cycle_length=1,
                             datasets_sloppy_parallel_interleave=True).dataset
    interleaves = [(n, c) for n, c in graph_nodes(dataset)
                   if n.op == "ParallelInterleaveDatasetV4"]
    # Inputs end with cycle_length, block_length, buffer_output_elements,
    # prefetch_input_elements, num_parallel_calls.
    assert [const_input(n, c, -5) for n, c in interleaves] == [1]
    assert [n.attr["deterministic"].s for n, _ in interleaves] == [b"false"]
    default = [(n, c) for n, c in graph_nodes(imagenet_input(imagenet_dir).dataset)
               if n.op == "ParallelInterleaveDatasetV4"]
    assert [const_input(n, c, -5) for n, c in default] == [2]  # both shards
    assert [n.attr["deterministic"].s for n, _ in default] == [b"true"]
    prefetched = imagenet_input(imagenet_dir, datasets_parallel_interleave_prefetch=3).dataset
    legacy = [(n, c) for n, c in graph_nodes(prefetched)
              if n.op.startswith("LegacyParallelInterleaveDataset")]
    assert len(legacy) == 1
    node, consts = legacy[0]
    assert const_input(node, consts, -1) == 3  # prefetch_input_elements
    next(iter(prefetched))  # and it reads


def test_interleave_flags_on_cifar10_are_refused(cifar_dir):
    with pytest.raises(ParamsError, match=r"^--datasets_parallel_interleave_cycle_length=2: "
                                          r"only applies to imagenet"):
        cifar_input(cifar_dir, datasets_parallel_interleave_cycle_length=2)


def test_datasets_flags_without_a_file_pipeline_are_refused():
    from towertrain.config import flags as flags_lib
    params = Params(model="trivial", datasets_use_caching=True)
    with pytest.raises(ParamsError, match=r"^--datasets_use_caching=True: only applies to a "
                                          r"tf.data pipeline over files"):
        flags_lib.check_command_line(params, {"datasets_use_caching"})
