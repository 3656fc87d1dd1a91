"""The overlap property of --gradient_repacking and --gradient_pack_mb, proven
on traced graphs.

A pack's reduction must read only its own gradients: then the executor can
start it while the backward pass of earlier layers still runs. Two checks:
- every algorithm (nccl and psgpu traced for /gpu:0..3, which needs no GPU),
  with and without compact transfer: each gradient is a named placeholder,
  and the data ancestors of every summing op of pack k are placeholders of
  pack k's variables only;
- the training step itself (replicated and collective_all_reduce): the
  exchange sits in the step's top-level graph, not inside the finite check's
  branch (which would wait for every gradient), and the first pack (the last
  layer's gradients) does not depend on the conv layer's backward op.
"""
import numpy as np
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.engine import exchange
from towertrain.engine.exchange import packing
from towertrain.input_pipeline import from_arrays

from helpers.gpu_graph import gpu_trainer
from helpers.graph_walks import all_ops, data_ancestors
from helpers.serial_reference import IMAGE_SHAPE, NUM_CLASSES, tiny_model

SHAPES = [(3, 3, 2, 3), (3,), (48, 4), (4,)]  # conv kernel, bias, dense kernel, bias
SUMS = ("AddN", "AddV2", "NcclAllReduce", "CollectiveReduceV2")


def _traced_reduce(algorithm, devices):
    """The graph of `algorithm` summing placeholders g_<device>_<variable>."""
    signature = [tf.TensorSpec(shape, tf.float32, name=f"g_{d}_{v}")
                 for d in range(len(devices)) for v, shape in enumerate(SHAPES)]

    @tf.function(input_signature=signature)
    def reduce(*flat):
        per_device = []
        for d, device in enumerate(devices):
            with tf.device(device):
                per_device.append([tf.identity(flat[d * len(SHAPES) + v])
                                   for v in range(len(SHAPES))])
        return algorithm.reduce(per_device, devices)
    return reduce.get_concrete_function().graph


def _variables_read(op):
    return {int(a.name.split("_")[2]) for a in data_ancestors(op) if a.type == "Placeholder"}


@pytest.mark.parametrize("name,device,compact", [
    ("pscpu", "cpu", None), ("ring", "cpu", None), ("pscpu", "cpu", tf.float16),
    ("ring", "cpu", tf.bfloat16), ("nccl", "gpu", None), ("psgpu", "gpu", None),
    ("nccl", "gpu", tf.float16), ("psgpu", "gpu", tf.float16)])
def test_each_pack_reduction_reads_only_its_own_gradients(name, device, compact):
    devices = [f"/{device}:{i}" for i in range(4)]
    num_packs = 5
    graph = _traced_reduce(exchange.local_algorithm(name, compact, num_packs=num_packs), devices)
    packs = packing.plan([tf.zeros(s) for s in SHAPES], num_packs)
    assert len(packs) == num_packs
    for k, pack in enumerate(packs):
        own = {index for index, _, _ in pack.pieces}
        sums = [op for op in graph.get_operations()
                if op.type in SUMS and op.name.startswith(f"pack{k}/")]
        assert sums, f"pack {k}: no reduction found"
        read = set()
        for op in sums:
            assert _variables_read(op) <= own, (op.name, _variables_read(op), own)
            read |= _variables_read(op)
        assert read == own
    if name == "nccl":  # one NCCL all-reduce per pack per GPU
        nccl = [op for op in graph.get_operations() if op.type == "NcclAllReduce"]
        assert len(nccl) == 4 * num_packs
        assert {op.device.upper()[-5:] for op in nccl} == {f"GPU:{i}" for i in range(4)}
    if name == "psgpu":  # summed on the first GPU, one sum per pack
        adds = [op for op in graph.get_operations() if op.type == "AddN"]
        assert len(adds) == num_packs and all(op.device.upper().endswith("GPU:0")
                                              for op in adds)


def _cpu_trainer(mode, spec, packs, pack_mb=None):
    rng = np.random.default_rng(0)
    images = rng.standard_normal((16,) + IMAGE_SHAPE).astype(np.float32)
    labels = rng.integers(0, NUM_CLASSES, 16).astype(np.int32)
    params = Params(device="cpu", num_gpus=4, variable_update=mode,
                    all_reduce_spec=spec, gradient_repacking=packs,
                    gradient_pack_mb=pack_mb, num_warmup_batches=0)
    return Trainer(params, model=tiny_model(), input_source=from_arrays(images, labels, 8))


def _gpu_trainer(spec, packs):
    rng = np.random.default_rng(0)
    images = rng.standard_normal((16,) + IMAGE_SHAPE).astype(np.float32)
    labels = rng.integers(0, NUM_CLASSES, 16).astype(np.int32)
    return gpu_trainer(model=tiny_model(), input_source=from_arrays(images, labels, 8),
                       all_reduce_spec=spec, gradient_repacking=packs,
                       data_format="NHWC")


@pytest.mark.parametrize("build", [
    lambda packs: _cpu_trainer("replicated", "pscpu", packs),
    lambda packs: _cpu_trainer("collective_all_reduce", "pscpu/xring", packs),
    lambda packs: _gpu_trainer("nccl", packs),
    # Packs sized in bytes: at most 145 B cuts the 1012 B into the same 7 packs.
    lambda packs: _cpu_trainer("replicated", "pscpu", 0, pack_mb=0.000145),
    lambda packs: _cpu_trainer("collective_all_reduce", "pscpu/xring", 0,
                               pack_mb=0.000145)],
    ids=["pscpu", "pscpu/xring", "nccl-gpu", "pscpu-bytes", "pscpu/xring-bytes"])
def test_first_pack_of_the_step_waits_only_for_the_last_layers(build):
    # 253 values in 7 packs of ~36: pack 0 holds the dense bias and part of
    # the dense kernel (192 values), the last pack the conv kernel.
    graph = build(7).trace_step().graph
    top = graph.get_operations()
    conv_backward = [op for op in all_ops(graph) if op.type == "Conv2DBackpropFilter"]
    assert len(conv_backward) == 4  # one per tower, in the top-level graph
    assert all(op in top for op in conv_backward)

    def waits_for_conv(k):
        sums = [op for op in top if op.type in SUMS and f"/pack{k}/" in op.name]
        assert sums, f"no reduction of pack {k} in the step's top-level graph"
        return [any(c in data_ancestors(op) for c in conv_backward) for op in sums]
    assert not any(waits_for_conv(0))
    assert all(waits_for_conv(6))
