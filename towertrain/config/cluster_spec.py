"""Which cluster a run belongs to, from --worker_hosts/--task_index or TF_CONFIG.

Pure Python and no TensorFlow: Params checks the flags with it before anything
is built, and towertrain.engine.distributed.cluster joins the cluster it
describes. Worker 0 is the chief.
"""
import dataclasses
import json
import os
from typing import Optional, Tuple

from towertrain.errors import ClusterError

JOB = "worker"


@dataclasses.dataclass(frozen=True)
class Cluster:
    workers: Tuple[str, ...]  # "host:port" per task, task 0 is the chief
    task_index: int = 0

    @property
    def num_workers(self) -> int:
        return len(self.workers)

    @property
    def is_chief(self) -> bool:
        return self.task_index == 0

    @property
    def address(self) -> str:
        return self.workers[self.task_index]

    def task_name(self, index: Optional[int] = None) -> str:
        index = self.task_index if index is None else index
        return f"/job:{JOB}/replica:0/task:{index}"

    def describe(self, index: int) -> str:
        return f"worker task {index} ({self.workers[index]})"


SINGLE = Cluster(workers=("local",), task_index=0)


def parse_worker_hosts(text: str) -> Tuple[str, ...]:
    hosts = tuple(h.strip() for h in str(text).split(",") if h.strip())
    if not hosts:
        raise ClusterError(f"--worker_hosts={text}: needs host:port[,host:port...]")
    for host in hosts:
        name, _, port = host.rpartition(":")
        if not name or not port.isdigit() or not 0 < int(port) < 65536:
            raise ClusterError(f"--worker_hosts={text}: '{host}' is not host:port")
    if len(set(hosts)) != len(hosts):
        raise ClusterError(f"--worker_hosts={text}: an address is listed twice")
    return hosts


def from_tf_config(text: str) -> Cluster:
    try:
        config = json.loads(text)
        workers = tuple(config["cluster"]["worker"])
        task = config.get("task", {})
        if task.get("type", JOB) != JOB:
            raise ClusterError(f"TF_CONFIG: task type {task.get('type')!r}: only 'worker' "
                               "tasks are supported (no parameter servers, no evaluator)")
        index = int(task.get("index", 0))
    except (ValueError, KeyError, TypeError) as err:
        if isinstance(err, ClusterError):
            raise
        raise ClusterError(f"TF_CONFIG: not a cluster description ({err}); expected "
                           '{"cluster": {"worker": ["h:p", ...]}, "task": {"type": '
                           '"worker", "index": K}}') from None
    hosts = parse_worker_hosts(",".join(workers))
    if not 0 <= index < len(hosts):
        raise ClusterError(f"TF_CONFIG: task index {index} is not in 0..{len(hosts) - 1}")
    return Cluster(hosts, index)


def from_params(params, environ=None) -> Cluster:
    """The cluster of a run: --worker_hosts/--task_index, else TF_CONFIG, else
    one local process (SINGLE). Runs no TensorFlow op."""
    environ = os.environ if environ is None else environ
    if params.worker_hosts:
        hosts = parse_worker_hosts(params.worker_hosts)
        if not 0 <= params.task_index < len(hosts):
            raise ClusterError(f"--task_index={params.task_index}: must be in "
                               f"0..{len(hosts) - 1} (--worker_hosts lists {len(hosts)})")
        return Cluster(hosts, params.task_index)
    if params.variable_update == "collective_all_reduce" and environ.get("TF_CONFIG"):
        return from_tf_config(environ["TF_CONFIG"])
    return SINGLE
