"""Checks of the multi-worker flags against the rest of the run (the worker
list's grammar, --task_index within it, the mode that crosses workers, where
the cluster comes from); each flag's own checks are beside its declaration
(towertrain.engine.distributed.settings). Every message starts with the flag
at fault."""
from towertrain.config import cluster_spec
from towertrain.errors import ClusterError


def validate_cluster(p, fail):
    _validate_source(p, fail)
    if p.worker_hosts is None:
        if p.task_index:
            fail("task_index", p.task_index, "needs --worker_hosts (or TF_CONFIG)")
        return
    try:
        hosts = cluster_spec.parse_worker_hosts(p.worker_hosts)
    except ClusterError as err:
        fail("worker_hosts", p.worker_hosts, str(err).split(": ", 1)[1])
    if p.task_index >= len(hosts):
        fail("task_index", p.task_index, f"must be in 0..{len(hosts) - 1} "
             f"(--worker_hosts lists {len(hosts)} workers)")
    if p.variable_update != "collective_all_reduce":
        fail("worker_hosts", p.worker_hosts, "needs --variable_update=collective_all_reduce "
             f"(got {p.variable_update})")


def _validate_source(p, fail):
    if p.cluster_source == "flags" and p.worker_hosts is None:
        fail("cluster_source", "flags", "needs --worker_hosts (and --task_index)")
    if p.cluster_source in ("tf_config", "slurm"):
        if p.worker_hosts is not None:
            fail("worker_hosts", p.worker_hosts, f"is not read with --cluster_source="
                 f"{p.cluster_source}; drop it, or use --cluster_source=flags")
        if p.variable_update != "collective_all_reduce":
            fail("cluster_source", p.cluster_source, "needs --variable_update="
                 f"collective_all_reduce (got {p.variable_update})")
