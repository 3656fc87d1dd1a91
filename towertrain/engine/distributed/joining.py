"""Joining the cluster, with its one failure a user causes said in one line.

TensorFlow starts this task's gRPC server lazily, at the first op: an
address it cannot serve (a port in use) surfaced there as a traceback ending
'UnknownError: Could not start gRPC server', which names neither the port nor
the flag. The server is started right after the join instead, and the
failure names the address, the source of the cluster and why.
"""
import errno
import socket

import tensorflow as tf

from towertrain import private_api
from towertrain.engine.distributed import cluster as cluster_lib
from towertrain.errors import ClusterError
from towertrain.plan.cluster import SOURCES


def join(layout, before_server=None):
    """Joins the cluster of `layout` (cluster_lib.setup) and starts this
    task's server; returns the cluster. before_server(cluster): called once
    the cluster is known, before its server starts (and may log a failure)."""
    cluster = cluster_lib.setup(layout)
    if cluster.num_workers > 1:
        if before_server is not None:
            before_server(cluster)
        try:
            private_api.eager_context().ensure_initialized()
        except tf.errors.OpError as err:
            raise ClusterError(unserved_address(cluster, err)) from None
    return cluster


def unserved_address(cluster, err):
    """Why this task's server did not start: its port in use (probed as a
    server binds it, reusing addresses left in TIME_WAIT), an address that
    is not this machine's, else TensorFlow's reason."""
    host, _, port = cluster.address.rpartition(":")
    host = host.strip("[]")
    why = f"TensorFlow: {str(err).strip().splitlines()[0]}"
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, int(port)))
    except OSError as probe_error:
        if probe_error.errno == errno.EADDRINUSE:
            why = f"port {port} is in use by another process"
        elif probe_error.errno == errno.EADDRNOTAVAIL:
            why = f"{host} is not an address of this machine"
    return (f"{SOURCES.get(cluster.source, cluster.source)}: this task's address "
            f"{cluster.address} (task {cluster.task_index}) cannot be served: {why}; free the "
            "port or give this task another address")
