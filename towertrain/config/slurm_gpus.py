"""A Slurm task's own GPUs, set before anything asks TensorFlow for devices.

CUDA reads CUDA_VISIBLE_DEVICES once, when TensorFlow first lists or uses a
device (tf.config.list_physical_devices initializes CUDA); a value written
later changes nothing, and every task of a node would map every GPU of it.
A run asks for devices early: Params works out an unset --device from the
machine (towertrain.config.machine), and the plan counts its GPUs. So
Params claims the task's share first thing (claim), from Slurm's variables
alone; the cluster's resolution (towertrain.plan.cluster) claims the same,
once per process.

Slurm's step is read through TensorFlow's SlurmClusterResolver (tasks), which
touches no device: a node's tasks listen on --slurm_port_base + 0, 1, ...,
and task k of the node's W gets GPUs k*G .. k*G+G-1 of the node's list
(gpu_share.share, G = --num_gpus).
"""
import contextlib
import os

from towertrain.config import gpu_share
from towertrain.config.declare import take
from towertrain.engine.process.settings import Devices
from towertrain.errors import ClusterError, DeviceError

JOB = "worker"

# CUDA_VISIBLE_DEVICES as this process found it, by the environment it set a
# share in, and the share: a later claim (Params are built more than once)
# divides the node's list again, never the task's own.
_CLAIMED = {}


def _int(text, default):
    try:
        return int(text)
    except (TypeError, ValueError):
        return default


def slurm_present(environ) -> bool:
    """A Slurm step of more than one task (one task is one process)."""
    return _int(environ.get("SLURM_STEP_NUM_TASKS"), 1) > 1


@contextlib.contextmanager
def resolver_environment(environ, names):
    """TensorFlow's resolvers read os.environ only: while they run, the
    variables `names` of a given mapping (tests) stand in for the real ones."""
    if environ is os.environ:
        yield
        return
    saved = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ.pop(name, None)
        if environ.get(name) is not None:
            os.environ[name] = environ[name]
    try:
        yield
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value


def tasks(port_base, environ):
    """(worker addresses, this task's index) of the Slurm step, from
    SlurmClusterResolver; its errors (RuntimeError, ValueError, KeyError,
    IndexError) pass through."""
    import tensorflow as tf  # deferred: config imports no TensorFlow; this probes no device
    count = _int(environ.get("SLURM_STEP_NUM_TASKS"), 0)
    # The resolver's own GPU split numbers a node's GPUs from 0 whatever
    # CUDA_VISIBLE_DEVICES lists (GPUs 4-7 of a job become 0-3): it hands out
    # none (one "GPU" per task, nothing set) and gpu_share splits the list.
    options = dict(gpus_per_node=max(count, 1), gpus_per_task=1, auto_set_gpu=False)
    names = [n for n in environ if n.startswith("SLURM_")] + [gpu_share.VISIBLE]
    with resolver_environment(environ, names):
        resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
            port_base=port_base, **options)
        spec = resolver.cluster_spec().as_dict().get(JOB) or []
        workers = [spec[i] for i in sorted(spec)] if isinstance(spec, dict) else list(spec)
        return workers, int(resolver.task_id)


def wants_gpus(params, environ) -> bool:
    """Whether this run's towers are GPUs, told without asking TensorFlow:
    --device=gpu, or no --device on a node that has GPUs (then the machine's
    default is gpu)."""
    if params.device is not None:
        return params.device == "gpu"
    return bool(gpu_share.machine_gpus(environ))


def _is_slurm_run(params, environ) -> bool:
    """Slurm is this run's cluster: named, or the one present (the plan
    refuses the other cases, with their reasons)."""
    if params.variable_update != "collective_all_reduce":
        return False
    if params.cluster_source == "slurm":
        return True
    return (params.cluster_source == "auto" and slurm_present(environ)
            and not params.worker_hosts and not environ.get("TF_CONFIG"))


def claim(params, environ=None, workers=None, task_index=None) -> None:
    """Sets CUDA_VISIBLE_DEVICES in `environ` to this Slurm task's own GPUs:
    its share of its node's, by its rank among the node's tasks (their ports'
    order). Nothing when the run is not a Slurm step of several tasks on
    GPUs, or srun --gpus-per-task already gave each task its own. workers,
    task_index: the step's, when the caller resolved them. Raises
    ClusterError when the node's GPUs do not go round."""
    environ = os.environ if environ is None else environ
    if (not _is_slurm_run(params, environ) or environ.get("SLURM_GPUS_PER_TASK")
            or not wants_gpus(params, environ)):
        return
    claimed = _CLAIMED.get(id(environ))
    if claimed is not None and environ.get(gpu_share.VISIBLE) == claimed[1]:
        node_gpus = claimed[0]
    else:
        node_gpus = gpu_share.machine_gpus(environ)
    if not node_gpus:
        return  # no GPU to share: the devices say why none is there
    if workers is None:
        try:
            workers, task_index = tasks(params.slurm_port_base, environ)
        except (RuntimeError, ValueError, KeyError, IndexError):
            return  # the cluster's resolution names what is wrong with the step
    if len(workers) < 2:
        return
    address = workers[task_index]
    host = address.rpartition(":")[0]
    node = [a for a in workers if a.rpartition(":")[0] == host]
    try:
        own = gpu_share.share(node.index(address), len(node), take(Devices, params).tower_count(),
                              node_gpus, where=f"node {host}")
    except DeviceError as err:
        raise ClusterError(f"--cluster_source=slurm: {err}") from None
    if environ.get(gpu_share.VISIBLE) != own:
        environ[gpu_share.VISIBLE] = own
    _CLAIMED[id(environ)] = (node_gpus, own)
