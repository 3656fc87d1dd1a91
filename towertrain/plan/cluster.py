"""Which cluster this process belongs to, through TensorFlow's cluster resolvers.

--cluster_source picks where the cluster comes from:

  flags      --worker_hosts/--task_index, as given;
  tf_config  the TF_CONFIG variable Kubernetes operators (TFJob, ...) write,
             read by tf.distribute.cluster_resolver.TFConfigClusterResolver; a
             'chief' job, if any, is task 0 and the 'worker' tasks follow;
  slurm      the environment `srun` sets for each task, read by
             tf.distribute.cluster_resolver.SlurmClusterResolver (one task
             per node; a node's tasks listen on --slurm_port_base + k; on
             GPUs each task gets its own --num_gpus of the node's GPUs
             through CUDA_VISIBLE_DEVICES, set before TensorFlow lists a
             device: towertrain.config.slurm_gpus);
  auto       (default) the one present: --worker_hosts, TF_CONFIG, or a Slurm
             step of more than one task. More than one present is an error
             that asks for --cluster_source; each needs
             --variable_update=collective_all_reduce, or is an error.

Runs no TensorFlow op: it must run before the cluster is joined. `resolve`
is the one entry point: a process works its cluster out once (the resolvers
read the environment, and Slurm's sets CUDA_VISIBLE_DEVICES), every later call with
the same settings and environment gets that same answer.
"""
import json
import os

from towertrain.config import slurm_gpus
from towertrain.config.cluster_spec import JOB, SINGLE, Cluster, from_flags, parse_worker_hosts
from towertrain.config.declare import take
from towertrain.engine.process.settings import Devices
from towertrain.errors import ClusterError

SOURCES = {"flags": "--worker_hosts/--task_index", "tf_config": "TF_CONFIG",
           "slurm": "Slurm", "local": "one process"}
CHIEF = "chief"


# The settings a cluster is resolved from (and the towers a Slurm task claims
# GPUs for), and the environment it reads.
_SETTINGS = ("cluster_source", "worker_hosts", "task_index", "variable_update",
             "slurm_port_base")
_ENVIRONMENT_PREFIXES = ("TF_CONFIG", "SLURM_")
_RESOLVED = {}


def resolve(params, environ=None) -> Cluster:
    """The cluster of a run (SINGLE for one local process), worked out once per
    process for the same settings and environment."""
    environ = os.environ if environ is None else environ
    # params.device as given: resolving it would ask TensorFlow for devices
    # before this task's own GPUs are set (towertrain.config.slurm_gpus).
    key = (tuple(getattr(params, name) for name in _SETTINGS), params.device,
           take(Devices, params).tower_count(),
           tuple(sorted((name, value) for name, value in environ.items()
                        if name.startswith(_ENVIRONMENT_PREFIXES))))
    if key not in _RESOLVED:
        _RESOLVED[key] = _resolve(params, environ)
    return _RESOLVED[key]


def _resolve(params, environ) -> Cluster:
    source = params.cluster_source
    if source == "auto":
        present = _present(params, environ)
        if len(present) > 1:
            raise ClusterError(f"--cluster_source=auto: the cluster is given more than once "
                               f"({', '.join(SOURCES[s] for s in present)}); choose one with "
                               f"--cluster_source={'|'.join(present)}")
        source = present[0] if present else "local"
    if source == "flags":
        return from_flags(params)
    if source == "tf_config":
        text = environ.get("TF_CONFIG")
        if not text:
            raise ClusterError("--cluster_source=tf_config: the TF_CONFIG environment "
                               "variable is not set")
        cluster = from_tf_config(text)  # a malformed one is named first
    elif source == "slurm":
        cluster = from_slurm(params, environ)
    else:
        return SINGLE
    # One rule for every source, as Params has it for --worker_hosts: a
    # cluster needs the exchange that crosses workers; otherwise each task
    # trained alone, with full output and exit 0.
    _check_exchange(params, source, environ)
    return cluster


def _present(params, environ):
    """The cluster sources present, whatever --variable_update: a malformed
    TF_CONFIG, or one given without collective_all_reduce, is an error rather
    than ignored."""
    found = ["flags"] if params.worker_hosts else []
    if environ.get("TF_CONFIG"):
        found.append("tf_config")
    if slurm_gpus.slurm_present(environ):
        found.append("slurm")
    return found


def _check_exchange(params, source, environ):
    if params.variable_update == "collective_all_reduce":
        return
    what = ("TF_CONFIG is set" if source == "tf_config" else
            f"this Slurm step has {environ.get('SLURM_STEP_NUM_TASKS')} tasks")
    alone = "unset TF_CONFIG" if source == "tf_config" else "run one task (srun -n 1)"
    raise ClusterError(f"--variable_update={params.variable_update}: {what}, which describes a "
                       "cluster of workers that needs --variable_update=collective_all_reduce "
                       f"(each task would otherwise train alone); pass it, or {alone} to "
                       "train in one process")


def from_tf_config(text) -> Cluster:
    """The cluster of a TF_CONFIG text: {"cluster": {["chief": [..],] "worker":
    [..]}, "task": {"type": "worker", "index": K}}."""
    import tensorflow as tf  # deferred: the plan imports no TensorFlow
    try:
        json.loads(text)
        with slurm_gpus.resolver_environment({"TF_CONFIG": text}, ["TF_CONFIG"]):
            resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
            jobs = resolver.cluster_spec().as_dict()
            task_type, task_id = resolver.task_type, resolver.task_id
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ClusterError(f"TF_CONFIG: not a cluster description ({err}); expected "
                           '{"cluster": {"worker": ["h:p", ...]}, "task": {"type": '
                           '"worker", "index": K}}') from None
    # This task's own type first: that is the one the user must change.
    unsupported = ([task_type] if task_type not in (JOB, CHIEF, None) else []) + sorted(
        set(jobs) - {JOB, CHIEF})
    if unsupported:
        raise ClusterError(f"TF_CONFIG: task type {unsupported[0]!r}: only 'chief' and "
                           "'worker' tasks are supported (no parameter servers, no evaluator)")
    chiefs, workers = _addresses(jobs.get(CHIEF)), _addresses(jobs.get(JOB))
    if len(chiefs) > 1:
        raise ClusterError(f"TF_CONFIG: {len(chiefs)} 'chief' tasks; at most one")
    hosts = parse_worker_hosts(",".join(chiefs + workers))
    index = (0 if task_type == CHIEF else len(chiefs) + int(task_id or 0))
    if task_type == CHIEF and task_id:
        raise ClusterError(f"TF_CONFIG: chief task index {task_id}; the chief is index 0")
    if not 0 <= index < len(hosts):
        raise ClusterError(f"TF_CONFIG: task index {task_id} is not in "
                           f"0..{len(workers) - 1}")
    return Cluster(hosts, index, source="tf_config")


def _addresses(job):
    """A ClusterSpec job (a list, or {index: address}) as a list in index order."""
    if job is None:
        return []
    if isinstance(job, dict):
        return [job[i] for i in sorted(job)]
    return list(job)


def from_slurm(params, environ=None) -> Cluster:
    """The cluster of this Slurm step, from SlurmClusterResolver: one task per
    worker, a node's tasks on --slurm_port_base + 0, 1, ...; on GPUs this
    task's own GPUs set in `environ` (towertrain.config.slurm_gpus, which
    Params already asked before any device probe)."""
    environ = os.environ if environ is None else environ
    try:
        workers, task_id = slurm_gpus.tasks(params.slurm_port_base, environ)
    except (RuntimeError, ValueError, KeyError, IndexError) as err:
        raise ClusterError(f"--cluster_source=slurm: {str(err).splitlines()[0]} (run under "
                           "srun, which sets SLURM_PROCID, SLURM_STEP_NUM_TASKS, "
                           "SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE)") from None
    if len(workers) == 1:
        return SINGLE
    cluster = Cluster(parse_worker_hosts(",".join(workers)), int(task_id), source="slurm")
    slurm_gpus.claim(params, environ, cluster.workers, cluster.task_index)
    return cluster


def describe(cluster: Cluster) -> str:
    """The header's line: the task's place in the cluster and its source."""
    role = " (chief)" if cluster.is_chief else ""
    return (f"task {cluster.task_index} of {cluster.num_workers}{role} at {cluster.address}, "
            f"from {SOURCES.get(cluster.source, cluster.source)}")
