"""Many workers: joining the cluster (joining), the cluster and its failures
(cluster), the peers' health (peer_watch)."""
