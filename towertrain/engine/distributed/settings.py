"""The cluster's settings, declared beside the code that joins it
(towertrain.engine.distributed; towertrain.plan.cluster resolves the cluster
from them, TF_CONFIG or Slurm), with their own refusals. The checks against
other sections (the mode, the worker list's grammar) are
towertrain.config.cluster_checks.
"""
from typing import Optional

from towertrain.config.declare import section, setting, tfcnn

CLUSTER_SOURCES = ("auto", "flags", "tf_config", "slurm")
COLLECTIVE_IMPLEMENTATIONS = ("auto", "ring", "nccl")  # TensorFlow's CommunicationImplementation


@section("Cluster")
class ClusterSettings:
    worker_hosts: Optional[str] = setting(
        None, "Multi-worker: comma-separated host:port of every worker, the chief "
        "first; needs --variable_update=collective_all_reduce (default: "
        "TF_CONFIG, else one process).",
        tfcnn=tfcnn("string", "", "collective_all_reduce workers, the chief first", unset=True))
    task_index: int = setting(
        0, "Multi-worker: this worker's index in --worker_hosts; 0 is the chief "
        "(checkpoints, output).",
        tfcnn=tfcnn("integer", 0))
    collective_timeout_secs: Optional[float] = setting(
        None, "Multi-worker: a worker that has not joined within this many seconds, "
        "or that stops answering health checks for about as long (dead or "
        "unreachable), stops the run (default: 60).")
    collective_implementation: str = setting(
        "auto", "Multi-worker: how the collectives that cross workers run, in "
        "TensorFlow's CommunicationImplementation terms: nccl (NCCL between "
        "the workers' GPUs), ring (TensorFlow's ring over gRPC, through host "
        "memory) or auto (nccl where the crossing member is a GPU, ring on "
        "CPU devices and for the per-step scalars on /cpu:0).",
        choices=COLLECTIVE_IMPLEMENTATIONS,
        applies_with=("variable_update", ("collective_all_reduce",)))
    cluster_source: str = setting(
        "auto", "Multi-worker: where the cluster comes from: flags "
        "(--worker_hosts/--task_index), tf_config (TF_CONFIG, as Kubernetes "
        "operators write it), slurm (the environment srun sets), or auto (the "
        "one present; more than one is an error).",
        choices=CLUSTER_SOURCES)
    straggler_threshold: float = setting(
        0.2, "Multi-worker: every --display_every steps the chief names a worker that "
        "reaches the exchange later than the median worker by more than this fraction "
        "of the step (and at least 5 ms), and whether it waited on its input or "
        "computed slowly; 0 turns the report off.",
        training_only=True)
    slurm_port_base: int = setting(
        8888, "Multi-worker under Slurm: the first port of a node's tasks (task k "
        "on a node listens on this + k).")

    @staticmethod
    def refuse(p, fail):
        if p.collective_timeout_secs is not None and not p.collective_timeout_secs > 0:
            fail("collective_timeout_secs", p.collective_timeout_secs, "must be > 0 seconds")
        if not p.straggler_threshold >= 0:
            fail("straggler_threshold", p.straggler_threshold, "must be >= 0 (0: no report)")
        if not 0 < p.slurm_port_base < 65536:
            fail("slurm_port_base", p.slurm_port_base, "must be a port number in 1..65535")
        if p.task_index < 0:
            fail("task_index", p.task_index, "must be >= 0 (0 is the chief)")
