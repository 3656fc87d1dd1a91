"""Multi-worker training on TensorFlow's distributed runtime (gRPC + collectives).

The cluster comes from --worker_hosts=h1:p1,h2:p2 --task_index=K, the
TF_CONFIG environment variable or a Slurm step (towertrain/plan/cluster.py,
--cluster_source). Worker 0 is the chief.

    layout = plan.lay_out(params)              # no TensorFlow op (towertrain.plan)
    cluster.setup(layout)                      # BEFORE any TensorFlow op runs

(towertrain.trainer.join_cluster(params) does both.)

setup() makes the local logical CPU devices (--device=cpu), then configures
the collective runtime and starts this task's gRPC server with
`context.enable_collective_ops(ServerDef)`: TensorFlow must not have run any
op before (measured: afterwards the context cannot be reconfigured).

Security: TensorFlow's gRPC runtime has no authentication and no encryption.
Anyone who can reach a worker's port can run arbitrary ops in it. Run only on
a trusted, private network. The server binds only the address given for its
task in the cluster (not 0.0.0.0).
"""
import socket
import time

from towertrain import tf_errors
from towertrain.config.cluster_spec import JOB, SINGLE, Cluster  # noqa: F401
from towertrain.errors import ClusterError  # noqa: F401 - a ParamsError: one-line flag error
from towertrain.engine.process import runtime

DEFAULT_COLLECTIVE_TIMEOUT_SECS = 60.0

_ACTIVE = {"cluster": SINGLE, "timeout": DEFAULT_COLLECTIVE_TIMEOUT_SECS}


def active() -> Cluster:
    """The cluster this process joined with setup() (SINGLE before)."""
    return _ACTIVE["cluster"]


def collective_timeout() -> float:
    return _ACTIVE["timeout"]


def setup(layout) -> Cluster:
    """Joins the cluster of `layout` (the run plan's first half,
    towertrain.plan.lay_out): logical CPUs, collective runtime, this task's
    server, with the plan's runtime, towers and collective timeout.

    Must run before TensorFlow runs any op. A single-process cluster only
    records itself. Returns the cluster.
    """
    # Before the server starts the runtime: its thread pools are fixed then
    # (workers sharing this host split its cores).
    runtime.configure(layout.runtime)
    cluster = layout.topology.cluster
    num_local_devices = layout.topology.num_towers
    device = layout.topology.device
    timeout_secs = layout.exchange.collective_timeout_secs
    if timeout_secs:
        _ACTIVE["timeout"] = float(timeout_secs)
    if cluster.num_workers == 1 and cluster is SINGLE:
        return cluster
    # Deferred: the command line imports this module before TensorFlow (--help).
    from tensorflow.core.protobuf import cluster_pb2, tensorflow_server_pb2
    from towertrain import private_api
    from towertrain.engine.process import devices as devices_lib
    if device == "cpu" and num_local_devices:
        devices_lib.ensure_logical_cpus(num_local_devices)
    cluster_def = cluster_pb2.ClusterDef()
    job = cluster_def.job.add(name=JOB)
    for index, address in enumerate(cluster.workers):
        job.tasks[index] = address
    server_def = tensorflow_server_pb2.ServerDef(
        cluster=cluster_def, job_name=JOB, task_index=cluster.task_index, protocol="grpc")
    # Measured: configure_collective_ops' leader does not reach the server
    # started from a ServerDef; without it every task leads its own group and
    # the collectives time out. The ServerDef's session config carries it.
    server_def.default_session_config.experimental.collective_group_leader = (
        cluster.task_name(0))
    if device == "cpu" and num_local_devices:
        # The server makes the task's devices from its session config; the
        # eager logical-device configuration alone leaves it one CPU.
        server_def.default_session_config.device_count["CPU"] = num_local_devices
    ctx = private_api.eager_context()
    # NCCL between workers needs nothing here: each collective asks for it
    # with its communication hint (--collective_implementation), which
    # TensorFlow's resolver honours for a group of GPUs, and the server makes
    # its NCCL communicator unless its config counts 0 GPUs. The config flag
    # below would turn NCCL on for every GPU collective regardless of the
    # hint (MultiWorkerMirroredStrategy sets it only in TF1 graph mode).
    ctx.configure_collective_ops(collective_leader=cluster.task_name(0),
                                 scoped_allocator_enabled_ops=(),
                                 use_nccl_communication=False)
    ctx.enable_collective_ops(server_def)
    _ACTIVE["cluster"] = cluster
    return cluster


HEALTH_CHECK_RETRIES, HEALTH_CHECK_PAUSE_S = 4, 0.5


def unreachable_tasks(cluster: Cluster, timeout: float = 2.0):
    """Health check: the other tasks whose server does not accept a TCP
    connection within `timeout` seconds (dead, or not reachable)."""
    dead = []
    for index, address in enumerate(cluster.workers):
        if index == cluster.task_index:
            continue
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                pass
        except OSError:
            dead.append(index)
    return dead


def failure_message(cluster: Cluster, err, step=None, after=None) -> str:
    """One line for a collective that failed or timed out: names the tasks that
    no longer answer (health check), else says none could be singled out.
    step: the last step this worker completed (None: before the first);
    after: what happens next (towertrain.engine.distributed.peer_loss.next_words)."""
    dead = unreachable_tasks(cluster)
    # A peer killed a moment ago can still be closing its sockets (its listening
    # one can outlive the connection whose reset failed this step): look again.
    for _ in range(HEALTH_CHECK_RETRIES):
        if dead:
            break
        time.sleep(HEALTH_CHECK_PAUSE_S)
        dead = unreachable_tasks(cluster)
    what = type(err).__name__
    lines = [line.strip() for line in (getattr(err, "message", None) or str(err)).splitlines()]
    useful = [line for line in lines if line and not tf_errors.is_boilerplate(line)]
    detail = (useful or lines or [""])[0][:200]
    me = cluster.describe(cluster.task_index)
    when = "" if step is None else f" in step {step + 1} (step {step} done)"
    then = f"; {after}" if after else ""
    if dead:
        names = ", ".join(cluster.describe(i) for i in dead)
        if after:  # the cause, short: the error's own words go to the worker's log
            return f"{me} lost {names}{when}: unreachable ({what}){then}"
        return (f"multi-worker run stopped on {me}: "
                f"{names} unreachable ({what}: {detail})")
    return (f"multi-worker run stopped on {me}{when}: a "
            f"collective failed or timed out after {collective_timeout():g}s, every "
            f"peer still accepts connections ({what}: {detail}){then}")


def joined(wanted: Cluster, worker_hosts=None) -> Cluster:
    """The cluster a Trainer whose plan asks for `wanted` runs in: the one
    setup() joined. A multi-worker run in a process that did not join raises
    ClusterError (worker_hosts: the flag's text, for the message)."""
    current = active()
    if wanted.num_workers > 1 and wanted != current:
        raise ClusterError(f"--worker_hosts={worker_hosts}: this process has not "
                           "joined the cluster; call towertrain.trainer.join_cluster(params) "
                           "before TensorFlow runs any op")
    return current if wanted.num_workers > 1 else SINGLE
