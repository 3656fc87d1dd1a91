"""Facts of the GPU training step, read from steps traced with GPU device
names (no GPU needed): what a GPU would launch, and what waits for what.

    python bench/gpu_step_facts.py                 # ResNet-50 x 8 GPUs, and 2 workers x 4 GPUs
    python bench/gpu_step_facts.py --model=resnet20 --gpus=4

Replicated (one worker): the largest op's input count (one op gathering
thousands of tensors is a sync point), IsFinite ops (one per pack per
device), ops per (trainable variable x device) over the whole step, and the
GPU-to-GPU transfers outside the exchange (the batch-norm statistics: one
per device). Collective_all_reduce (2 workers x 4 GPUs, every GPU spec):
collectives on a CPU device that a variable update waits for (none: no host
round trip before an update), the multi-node groups in the order they are
opened before step 1 (the same on every worker), and the local groups each
GPU's reduce-scatter and gather use (one).
"""
import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

GPU_SPECS = ("collective", "nccl/xring", "psgpu/xring", "scatter/xring")
EXCHANGE_SCOPES = ("allreduce/", "collective_allreduce/")


def _graph_ops(graph):
    from towertrain.engine.exchange import graph_facts
    return [op for g in graph_facts.function_graphs(graph) for op in g.get_operations()]


def _gpu(op):
    import tensorflow as tf
    spec = tf.DeviceSpec.from_string(op.device or "")
    return spec.device_index if (spec.device_type or "").upper() == "GPU" else None


def replicated_facts(model="resnet50", gpus=8, optimizer="momentum"):
    """{fact: value} of one worker's replicated step on `gpus` absent GPUs."""
    from towertrain import Params, Trainer
    from towertrain.engine.exchange import packing
    params = Params(device="gpu", num_gpus=gpus, model=model, variable_update="replicated",
                    optimizer=optimizer, batch_size=2)
    trainer = Trainer(params, check_devices=False)
    graph = trainer.trace_step().graph
    ops = _graph_ops(graph)
    trainable = trainer.variables.primary_variables()[0]
    packs = packing.plan_for_exchange(trainable, trainer.plan.exchange)
    widest = max(ops, key=lambda op: len(op.inputs))
    transfers = {}
    for op in ops:
        gpu = _gpu(op)
        if gpu is None or any(scope in op.name for scope in EXCHANGE_SCOPES):
            continue
        for tensor in op.inputs:
            source = _gpu(tensor.op)
            if source is not None and source != gpu:
                transfers.setdefault(gpu, set()).add(tensor.name)
    return {
        "model": model, "gpus": gpus, "packs": len(packs),
        "pack_mb": (trainer.plan.exchange.gradient_pack_bytes or 0) / 1e6,
        "widest_op_inputs": len(widest.inputs), "widest_op": f"{widest.type} {widest.name}",
        "is_finite_ops": sum(op.type == "IsFinite" for op in ops),
        "ops": len(ops),
        "ops_per_variable_device": len(ops) / (len(trainable) * gpus),
        "gpu_to_gpu_transfers_per_device": max((len(t) for t in transfers.values()), default=0),
    }


def cluster_facts(spec, task, workers=2, gpus=4, model="resnet20"):
    """{fact: value} of worker `task`'s collective_all_reduce step."""
    from towertrain import Params, Trainer
    from towertrain.engine.exchange import graph_facts
    from towertrain.plan import cluster as plan_cluster
    hosts = ",".join(f"127.0.0.1:{port}" for port in range(1, workers + 1))
    params = Params(device="gpu", num_gpus=gpus, batch_size=2, model=model,
                    variable_update="collective_all_reduce", all_reduce_spec=spec,
                    worker_hosts=hosts, task_index=task, data_format="NHWC")
    with graph_facts.stand_in_cluster(plan_cluster.resolve(params)):
        trainer = Trainer(params, check_devices=False)
        graph = trainer.trace_step().graph
    exchange = trainer.variables.collectives
    opened = graph_facts.group_order(exchange.opener.get_concrete_function().graph)
    local = {key for key, size, _ in exchange.groups() if size == gpus and key != (
        exchange.all_devices_group)}
    per_gpu = {}
    for _, op in graph_facts.collectives(graph):
        if op.type in ("CollectiveReduceScatterV2", "CollectiveGatherV2"):
            per_gpu.setdefault(_gpu(op), set()).add(graph_facts.group(op)[1])
    used = {graph_facts.group(op)[1] for _, op in graph_facts.collectives(graph)
            if op.type != "NcclAllReduce"}
    return {
        "spec": spec, "task": task,
        "cpu_collectives_before_updates": graph_facts.cpu_collectives_before_updates(graph),
        "multi_node_groups_opened": (None if opened is None
                                     else [key for key in opened if key not in local]),
        "step_groups_not_opened": sorted(used - set(opened or ())),
        "local_groups_per_gpu": max((len(keys) for keys in per_gpu.values()), default=0),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--gpus", type=int, default=8)
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from towertrain.engine.process import devices as devices_lib
    devices_lib.ensure_logical_cpus(1)
    facts = replicated_facts(args.model, args.gpus)
    print(f"replicated, {args.model} x {args.gpus} GPUs, momentum, float32, "
          f"{facts['packs']} packs of <= {facts['pack_mb']:g} MB:")
    for name in ("widest_op_inputs", "widest_op", "is_finite_ops", "ops",
                 "ops_per_variable_device", "gpu_to_gpu_transfers_per_device"):
        value = facts[name]
        print(f"  {name}: {value:.1f}" if isinstance(value, float) else f"  {name}: {value}")
    print("collective_all_reduce, 2 workers x 4 GPUs:")
    for spec in GPU_SPECS:
        both = [cluster_facts(spec, task) for task in (0, 1)]
        same = both[0]["multi_node_groups_opened"] == both[1]["multi_node_groups_opened"]
        print(f"  {spec}: CPU collectives before updates "
              f"{len(both[0]['cpu_collectives_before_updates'])}; multi-node groups opened "
              f"{both[0]['multi_node_groups_opened']} (same order on both workers: {same}); "
              f"step groups not opened {both[0]['step_groups_not_opened']}; local groups "
              f"per GPU {both[0]['local_groups_per_gpu']}")


if __name__ == "__main__":
    main()
