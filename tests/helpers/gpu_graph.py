"""A Trainer traced for 4 absent GPUs, and the small parameter-server model and
input whose variable sizes make the greedy spread unambiguous."""
import keras
import numpy as np

from towertrain import Params, Trainer
from towertrain.input_pipeline import from_arrays

NUM_GPUS = 4


def gpu_trainer(model=None, input_source=None, **overrides):
    overrides.setdefault("variable_update", "replicated")
    params = Params(device="gpu", num_gpus=NUM_GPUS, batch_size=2,
                    **overrides)
    return Trainer(params, model=model, input_source=input_source, check_devices=False)


def ps_model():
    """Variables of distinct sizes (50, 5, 20, 4, 12, 3): the greedy spread has
    no ties, so the expected GPU of each variable is unambiguous."""
    return keras.Sequential([
        keras.Input((1, 1, 10)),
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(5, name="d1"),
        keras.layers.Dense(4, name="d2"),
        keras.layers.Dense(3, name="logits"),
    ], name="ps_tiny")


def ps_input():
    rng = np.random.default_rng(1)
    images = rng.standard_normal((16, 1, 1, 10)).astype(np.float32)
    return from_arrays(images, rng.integers(0, 3, 16).astype(np.int32), 8)



def cluster_step(workers=2, task_index=0, **overrides):
    """(trainer, step graph) of worker `task_index` of a collective_all_reduce
    cluster of `workers` x NUM_GPUS absent GPUs, traced in this process
    (towertrain.engine.exchange.graph_facts.stand_in_cluster)."""
    from towertrain.engine.exchange import graph_facts as collective_graph
    hosts = ",".join(f"127.0.0.1:{port}" for port in range(1, workers + 1))
    overrides.setdefault("variable_update", "collective_all_reduce")
    overrides.setdefault("model", "trivial")
    params = Params(device="gpu", num_gpus=NUM_GPUS, batch_size=2,
                    worker_hosts=hosts, task_index=task_index, **overrides)
    from towertrain.plan import cluster as plan_cluster
    with collective_graph.stand_in_cluster(plan_cluster.resolve(params)):
        trainer = Trainer(params, check_devices=False)
        return trainer, trainer.trace_step().graph
