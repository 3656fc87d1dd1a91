"""A cluster's description, and the one --worker_hosts/--task_index give.

Pure Python and no TensorFlow: Params checks the flags with it before anything
is built. towertrain.plan.cluster finds the cluster of a run
(flags, TF_CONFIG or Slurm) and towertrain.engine.distributed.cluster joins
it. Worker 0 is the chief.
"""
import dataclasses
from typing import Optional, Tuple

from towertrain.errors import ClusterError

JOB = "worker"


@dataclasses.dataclass(frozen=True)
class Cluster:
    workers: Tuple[str, ...]  # "host:port" per task, task 0 is the chief
    task_index: int = 0
    # Where it came from (towertrain.plan.cluster.SOURCES): the
    # header says; two resolutions of one cluster are equal whatever the source.
    source: str = dataclasses.field(default="flags", compare=False)

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

    def workers_on_this_host(self) -> int:
        """How many of the cluster's workers share this task's host (itself
        included): they share its cores. Loopback names are one host."""
        host = _host(self.address)
        return sum(_host(address) == host for address in self.workers)


SINGLE = Cluster(workers=("local",), task_index=0, source="local")
LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}


def _host(address: str) -> str:
    name = address.rpartition(":")[0] or address
    return "localhost" if name.lower() in LOOPBACK else name.lower()


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


def from_flags(params) -> Cluster:
    """The cluster --worker_hosts/--task_index describe (checked by Params)."""
    hosts = parse_worker_hosts(params.worker_hosts)
    if not 0 <= params.task_index < len(hosts):
        raise ClusterError(f"--task_index={params.task_index}: must be in "
                           f"0..{len(hosts) - 1} (--worker_hosts lists {len(hosts)})")
    return Cluster(hosts, params.task_index, source="flags")
