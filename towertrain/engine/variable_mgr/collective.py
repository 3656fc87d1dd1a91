"""--variable_update=collective_all_reduce: replicated across worker processes.

Every device of every worker holds a copy of the variables; the exchange
(towertrain.engine.exchange.cross_worker) sums each pack over the cluster,
and every copy then applies the identical update, each deciding from its own
copy of the sums. The groups the step uses are opened, then initial values
are broadcast from worker 0 through them, and batch-norm statistics come from global
tower 0 (worker 0's tower 0), sent in the first gradient pack: every other
member contributes zeros, which gives worker 0's bits exactly. Seed-generator
states (int64, among the non-trainable values of a model with dropout) are
not synchronized: the step sets them before each use (engine/step/tower.py),
so each copy keeps its own worker's, and the statistics still ride pack 0.

Only the start-up collectives carry `timeout_seconds`
(--collective_timeout_secs): a peer that never joins raises DeadlineExceeded.
The step's collectives carry none (TensorFlow keeps a sleeping thread per
timed collective for the whole timeout); a peer that dies later is caught by
engine.distributed.peer_watch, which aborts the collectives (Unavailable).
The checkpoint format is that of `replicated` (primary copy + its slots).
"""
import functools

import tensorflow as tf

from towertrain.config.cluster_spec import SINGLE
from towertrain.engine.distributed import cluster as cluster_lib, peer_watch
from towertrain.engine.exchange import cross_worker, flow, packing
from towertrain.engine.step.tower import seed_state_indices

from .base import register, stats_tower
from .replicated import ReplicatedManager, copied


@register("collective_all_reduce")
class CollectiveManager(ReplicatedManager):

    def __init__(self, devices, exchange, clipping=None, cluster=None):
        super().__init__(devices, exchange, clipping, cluster or SINGLE)
        self.num_workers = self.cluster.num_workers
        self.task = self.cluster.task_index
        self.collectives = cross_worker.ClusterExchange(
            exchange, self.devices, self.cluster,
            exchange.collective_timeout_secs or cluster_lib.DEFAULT_COLLECTIVE_TIMEOUT_SECS)

    def _all_reduce(self, exchange):
        return None  # the exchange is the cluster's collectives

    def create(self, model, make_optimizer):
        super().create(model, make_optimizer)
        self._seed_states = frozenset(seed_state_indices(model))
        self.collectives.create(model.trainable_variables + model.non_trainable_variables)
        if self.num_workers > 1:
            # Every peer has joined once it returns.
            self.collectives.start([t + n for t, n in zip(self._trainable, self._non_trainable)])
            peer_watch.start(self.cluster, self.collectives.timeout)
        # The step's collectives carry no timeout (one sleeping thread each in
        # TensorFlow); a dead peer is the peer watch's to catch.
        self.collectives.timeout = 0

    def close(self):
        peer_watch.stop()

    def repack(self, exchange):
        super().repack(exchange)
        self.collectives.options = exchange

    def cluster_max(self, values, site):
        return self.collectives.workers_max(values, site)

    def cluster_count(self, count):
        """The step's examples (and stop requests) over every worker, before
        the towers: half-precision compute only (engine/step/train_step.py)."""
        return self.collectives.workers_sum(count)

    def lockstep_sum(self, tensors, point, device):
        """--sync_batch_norm: a cross-tower point's sums of this worker summed
        over every worker (engine/step/lockstep.py)."""
        return self.collectives.lockstep_sum(tensors, point, device)

    def exchange(self, tower_grads, tower_non_trainable=None, extra_values=None):
        grads = [g if g is not None else self._zeros(i) for i, g in enumerate(tower_grads)]
        extra_values = dict(extra_values or {})
        with tf.name_scope("collective_allreduce"):
            stats = self._stats_extra_values(tower_non_trainable)
            if stats is not None:
                extra_values["stats"] = (flow.FIRST, stats)
            return self.collectives.exchange(grads, extra_values)

    def _synchronized(self, values):
        """Positions of `values` (a tower's non-trainable values) that every
        copy takes from global tower 0: all but the seed states."""
        return [j for j in range(len(values)) if j not in self._seed_states]

    def _stats_extra_values(self, tower_non_trainable):
        """Multi-worker: each device's batch-norm statistics as one float32
        vector, global tower 0's on worker 0 and zeros elsewhere, to be summed
        in the first gradient pack. None where there are none, or one worker."""
        if (self.num_workers == 1 or tower_non_trainable is None
                or all(n is None for n in tower_non_trainable)):
            return None
        source = stats_tower(tower_non_trainable)
        stats = [tower_non_trainable[source][j]
                 for j in self._synchronized(tower_non_trainable[source])]
        if not stats or any(v.dtype != tf.float32 for v in stats):
            return None
        values = []
        for i, device in enumerate(self.devices):
            with tf.device(device):
                flat = tf.concat([tf.reshape(v, [-1]) for v in stats], 0)
                keep = self.task == 0 and i == source
                values.append(tf.identity(flat) if keep else tf.zeros_like(flat))
        return values

    def _statistics(self, tower_non_trainable, exchanged):
        if self.num_workers == 1:
            return super()._statistics(tower_non_trainable, exchanged)
        source = stats_tower(tower_non_trainable)
        values = tower_non_trainable[source]
        synced = self._synchronized(values)
        kept = [j for j in range(len(values)) if j not in synced]
        # Seed states: this worker's stats tower's, copied on the worker.
        local = [(lambda: [values[j] for j in kept]) if i == source
                 else copied([values[j] for j in kept], self.devices[source], device)
                 for i, device in enumerate(self.devices)]
        chosen = [values[j] for j in synced]
        if not chosen:
            summed = [list for _ in self.devices]
        elif exchanged.extra_values and "stats" in exchanged.extra_values:
            packs = packing.plan(chosen, 0)
            summed = [functools.partial(packing.scatter, [flat], packs, chosen)
                      for flat in exchanged.extra_values["stats"]]
        else:  # statistics no pack can carry (not float32): their own sum
            per_device = [[(n if n is not None else values)[j] for j in synced]
                          for n in tower_non_trainable]
            copies = self.collectives.from_chief(per_device, source,
                                                 self.collectives.key("stats"))
            summed = [functools.partial(list, copy) for copy in copies]
        return [functools.partial(_merged, len(values), synced, make_synced, kept, make_kept)
                for make_synced, make_kept in zip(summed, local)]


def _merged(size, synced, make_synced, kept, make_kept):
    """A copy's non-trainable values: the synchronized ones at `synced`, its
    worker's own at `kept`, built where this is called."""
    out = [None] * size
    for j, value in zip(synced, make_synced()):
        out[j] = value
    for j, value in zip(kept, make_kept()):
        out[j] = value
    return out
