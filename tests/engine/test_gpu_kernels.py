"""Every op a traced GPU step places on a GPU has a GPU (or DEFAULT) kernel
whose type constraints admit it, read from the CUDA-built TensorFlow's kernel
registry (helpers/kernel_coverage.py): for every path bench/gpu_proof.py
traces, every --variable_update, precision, optimizer, staging,
accumulation, sync batch norm and XLA, and the collective specs as 2
workers x 2 GPUs. Nothing runs: a GPU machine would still have to launch
the kernels, hold the memory and run NCCL (docs/gpu.md says so).

Needs the CUDA wheel in a venv of its own (`bash .ci/cuda_tf_venv`, which
.ci/run runs): skipped without it, except in CI (CI set), where it fails."""
import contextlib
import os

import pytest
import tensorflow as tf

from helpers import bench_scripts, kernel_coverage
from towertrain import Params, Trainer
from towertrain.engine.process import devices as devices_lib

# Ops the step uses that have no GPU kernel: each must stay on the host.
HOST_OPS = ("Timestamp",)

PROOF = bench_scripts.load("gpu_proof_trace")
# The proof's paths; its logical-GPU ones trace the same graph as the others.
PROOF_PATHS = {name: (overrides, kind) for name, (_, overrides, kind) in PROOF.PATHS.items()
               if kind != "logical"}
REPLICATED = dict(variable_update="replicated")
# Beyond the proof's: each remaining mode, precision, optimizer and option at
# least once (mixed, to keep the traces few).
OTHER_PATHS = {
    "pscpu_bf16_adam": dict(REPLICATED, all_reduce_spec="pscpu", use_bf16=True,
                            optimizer="adam"),
    "ps_gpu_fp16_vars_rmsprop": dict(variable_update="parameter_server",
                                     local_parameter_device="gpu", use_fp16=True,
                                     fp16_vars=True, optimizer="rmsprop"),
    "independent_sgd": dict(variable_update="independent", optimizer="sgd"),
    "psgpu_fp16_compact_sync_bn": dict(REPLICATED, all_reduce_spec="psgpu", use_fp16=True,
                                       compact_gradient_transfer=True,
                                       sync_batch_norm=True),
    "ring_accumulation_staged": dict(REPLICATED, all_reduce_spec="ring",
                                     gradient_accumulation_steps=2, staging_depth=1),
}
# Where the model's own ops change (precision, XLA, synchronized batch
# norm), ResNet-20 (conv, batch norm, residual adds); elsewhere only the
# engine's ops change, and the trivial model traces in a fraction of the time.
MODEL = "resnet20"
MODEL_MATTERS = {"use_fp16", "use_bf16", "fp16_vars", "xla_compile", "sync_batch_norm"}
COLLECTIVE_SPECS = ("pscpu/xring", "psgpu/xring", "collective")


@pytest.fixture(scope="module")
def kernels():
    reason = kernel_coverage.absent_reason()
    if reason and os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run this check")
    if reason:
        pytest.skip(reason)
    return kernel_coverage.gpu_kernels()


def _params(overrides, workers=1):
    overrides = dict(overrides)
    overrides.setdefault("model", MODEL if overrides.keys() & MODEL_MATTERS else "trivial")
    if workers > 1:
        overrides.update(worker_hosts="127.0.0.1:1,127.0.0.1:2", task_index=0)
    return Params(device="gpu", num_gpus=2, batch_size=2, data_format="NCHW",
                  init_learning_rate=0.01, num_warmup_batches=0, **overrides)


def traced(overrides, workers=1):
    """The step's GraphDefs (each phase's, with accumulation) traced for 2
    GPUs, of worker 0 of `workers`."""
    from towertrain.engine.exchange import graph_facts
    from towertrain.plan import cluster as plan_cluster
    devices_lib.ensure_logical_cpus(2)
    params = _params(overrides, workers)
    with (graph_facts.stand_in_cluster(plan_cluster.resolve(params)) if workers > 1
          else contextlib.nullcontext()):
        trainer = Trainer(params, check_devices=False)
        phases = [None] if trainer.accumulators is None else ["accumulate", "apply"]
        graphs = [trainer.trace_step(_phase(p)).graph.as_graph_def() for p in phases]
    trainer.close()
    return graphs


def _phase(name):
    from towertrain.engine.step import accumulate
    return {None: None, "accumulate": accumulate.ACCUMULATE, "apply": accumulate.APPLY}[name]


def assert_covered(graphs, kernels):
    for graph_def in graphs:
        lacking = kernel_coverage.missing(graph_def, kernels)
        assert not lacking, "on a GPU with no GPU kernel:\n" + "\n".join(lacking)
        for node, where, device in kernel_coverage.placed_nodes(graph_def):
            assert not (node.op in HOST_OPS and device == "GPU"), (node.name, where)


@pytest.mark.parametrize("path", sorted(PROOF_PATHS))
def test_every_op_of_the_proofs_paths_has_a_gpu_kernel(path, kernels):
    overrides, kind = PROOF_PATHS[path]
    collective = overrides.get("variable_update") == "collective_all_reduce"
    assert_covered(traced(overrides, workers=2 if collective else 1), kernels)


@pytest.mark.parametrize("path", sorted(OTHER_PATHS))
def test_every_op_of_the_other_modes_has_a_gpu_kernel(path, kernels):
    assert_covered(traced(OTHER_PATHS[path]), kernels)


@pytest.mark.parametrize("spec", COLLECTIVE_SPECS)
def test_every_op_of_the_collective_specs_has_a_gpu_kernel_on_2_workers(spec, kernels):
    assert_covered(traced(dict(variable_update="collective_all_reduce",
                               all_reduce_spec=spec), workers=2), kernels)


def test_an_op_placed_on_a_gpu_without_a_gpu_kernel_is_found(kernels):
    # The check itself: a scratch op with a CPU kernel only (and one whose
    # type the GPU kernel does not admit), placed on a GPU directly and by a
    # branch that inherits its If's device; the same ops on the CPU pass.
    @tf.function
    def scratch(flag, text):
        with tf.device("/gpu:0"):
            joined = tf.strings.join([text, text])
            added = tf.add(text, text)
            stamped = tf.cond(flag, tf.timestamp, lambda: tf.constant(0.0, tf.float64))
        with tf.device("/cpu:0"):
            fine = tf.strings.join([text, text]), tf.timestamp()
        return joined, added, stamped, fine

    graph_def = scratch.get_concrete_function(
        tf.TensorSpec([], tf.bool), tf.TensorSpec([], tf.string)).graph.as_graph_def()
    lacking = kernel_coverage.missing(graph_def, kernels)
    assert [line.split("(")[0] for line in lacking] == ["Add", "StringJoin", "Timestamp"], \
        lacking
    assert lacking[0].startswith("Add(T=string) ") and " in /cond_true" in lacking[2]
