"""--variable_update=collective_all_reduce: replicated across worker processes.

Every device of every worker holds a copy of the variables. Each step the
gradients are cut into packs (one per dtype, or --gradient_repacking=N per
dtype, reverse layer order) and each pack is summed over the cluster on its
own, by --all_reduce_spec:
- local/xring (hierarchical, the default: pscpu/xring on CPU, nccl/xring on
  GPU): the pack is summed on the worker first (pscpu: on /cpu:0; psgpu: on
  the first GPU; nccl: NCCL), then one CrossWorker `CollectiveReduceV2` per
  pack from that one member per worker (group size = workers), and the sum is
  copied back to every local device: L times fewer bytes cross the network
  than flat with L local devices;
- scatter/xring (Horovod's shape): a reduce-scatter inside the worker leaves
  local device i the worker's sum of shard i of the pack (1/L of it, the
  first len % L shards one longer); device i then all-reduces its shard
  across workers, in a group of device i of every worker (group size =
  workers, a group key per local index), so all L devices' links carry the
  exchange at once; an all-gather inside the worker gives every device the
  whole sum. On GPUs both local steps are the collective ops with the nccl
  hint (TensorFlow 2.21 implements CollectiveReduceScatterV2 only with
  NCCL), over a group of this worker's GPUs (a group key per worker task:
  group keys are global to the cluster), the pack padded to L equal shards
  (NCCL's reduce-scatter and gather take equal parts); on CPU devices the
  reduce-scatter is an add_n of the shard's slices placed on device i and
  the gather a concat on each device. On GPUs NCCL hands shard r to the
  group's rank r, and TensorFlow ranks a worker's GPUs by their links: every
  worker's GPUs must have the same links (homogeneous machines), so that
  device i holds the same shard on every worker;
- collective (flat): one `CollectiveReduceV2` per pack per device over all
  devices of the cluster (group size = workers x local devices).
Either way every copy then applies the identical update.

What makes this work (measured, see ../shared/DESIGN.md):
- all of a process's collective launches come from the one step tf.function;
- each local member passes its own `ordering_token` (the handle of a small
  resource variable on its device): without it the members are chained in
  program order and the group never forms;
- group and instance keys are constants chosen per call site (collective_keys.py),
  not counters, so a retrace on one worker gives the same keys as on the
  others; the instance keys sit in a key space of the model's variable
  layout alone (key_space), so trainers of different models in one process
  do not meet on a key whose shape TensorFlow has already fixed;
- only the start-up broadcast carries `timeout_seconds`
  (--collective_timeout_secs): a peer that never joins raises DeadlineExceeded.
  The step's collectives carry none (TensorFlow keeps a sleeping thread per
  timed collective for the whole timeout); a peer that dies later is caught by
  engine.distributed.peer_watch, which aborts the collectives (Unavailable).

Batch-norm statistics come from global tower 0 (worker 0's tower 0): they are
summed with every other member contributing zeros, which gives worker 0's
bits exactly. Initial values are broadcast from worker 0 the same way.
The checkpoint format is that of `replicated` (primary copy + its slots).
"""
import numpy as np
import tensorflow as tf

from towertrain import private_api
from towertrain.config import exchange_checks
from towertrain.engine.allreduce import packing
from towertrain.engine.distributed import cluster as cluster_lib, peer_watch

from .base import Exchanged, register, stats_tower
from .collective_keys import (ALL_DEVICES_GROUP_BASE, CROSS_WORKER_GROUP, KEYS,
                              LOCAL_GATHER_GROUP_BASE, LOCAL_SCATTER_GROUP_BASE,
                              WORKERS_GROUP, key_space, shard_group)
from .ordering import DeviceChains, device_type, is_gpu
from .replicated import ReplicatedManager


def member_device(devices, local):
    """The device whose pack sum crosses workers, for a local/xring spec."""
    return "/cpu:0" if local == "pscpu" and len(devices) > 1 else devices[0]


def shard_sizes(length, parts):
    """The lengths of the contiguous shards of a pack of `length` values over
    `parts` local devices: as equal as can be, the first length % parts one
    longer (zero-length shards where length < parts)."""
    base, longer = divmod(length, parts)
    return [base + (i < longer) for i in range(parts)]


def local_sum(flats, devices, local):
    """The sum of the local devices' pack by the local algorithm of a
    local/xring spec: a list whose first entry is the sum on member_device.
    nccl gives one output per GPU, and every one of them must be used: an
    NcclAllReduce whose output nothing reads is pruned from the step
    (auto_control_deps lists it among the async stateful ops), and the
    members that were kept then wait for it forever."""
    if len(devices) == 1:
        return [flats[0]]
    if local == "nccl":
        return private_api.nccl_all_sum(flats)
    with tf.device(member_device(devices, local)):
        return [tf.add_n(flats)]


@register("collective_all_reduce")
class CollectiveManager(ReplicatedManager):

    def __init__(self, devices, exchange, clipping=None):
        super().__init__(devices, exchange, clipping)
        self.cluster = cluster_lib.active()
        self.num_workers = self.cluster.num_workers
        self.task = self.cluster.task_index
        self.group_size = self.num_workers * len(self.devices)
        # One group per size: TensorFlow fixes a group key's size for the life of
        # the process, so trainers of different device counts (the scaling
        # benchmark's 1..N) need their own keys; every worker computes the same.
        self.all_devices_group = ALL_DEVICES_GROUP_BASE + self.group_size
        self.timeout = cluster_lib.collective_timeout()
        self.local = exchange_checks.split_spec(exchange.all_reduce_spec)[0]
        # 'nccl' or 'ring' (the plan resolved --collective_implementation).
        self.implementation = exchange.collective_implementation
        self._chains = DeviceChains()

    def _all_reduce(self, exchange):
        return None  # the exchange is the collectives below

    def create(self, model, make_optimizer):
        super().create(model, make_optimizer)
        self._key_base = key_space(model.trainable_variables + model.non_trainable_variables)
        self._tokens = []
        for device in self.devices + ["/cpu:0"]:
            with tf.device(device):
                self._tokens.append(tf.Variable(0.0, trainable=False, name="ordering_token"))
        # On a CPU member, the gradient packs' own chain, so their collectives
        # wait for nothing else (the scalars' token on /cpu:0 follows every
        # tower). A GPU keeps one chain (engine/variable_mgr/ordering.py).
        self._pack_token = None
        if (self.local not in (None, "scatter")
                and not is_gpu(member_device(self.devices, self.local))):
            with tf.device(member_device(self.devices, self.local)):
                self._pack_token = tf.Variable(0.0, trainable=False, name="pack_token")
        if self.num_workers > 1:
            self._broadcast_from_chief()  # every peer has joined once it returns
            peer_watch.start(self.cluster, self.timeout)
        # The step's collectives carry no timeout (one sleeping thread each in
        # TensorFlow); a dead peer is the peer watch's to catch.
        self.timeout = 0

    def close(self):
        peer_watch.stop()

    # -- collectives ------------------------------------------------------

    def _token_on(self, device):
        """The ordering token of a cross-worker member on `device`."""
        if self._pack_token is not None:
            return self._pack_token
        return self._tokens[self.devices.index(device)]

    def _hint(self, device):
        """The communication hint of a collective on `device`: NCCL needs GPUs."""
        return self.implementation if is_gpu(device) else "ring"

    def _key(self, site):
        """The instance key of a call site, in this model's key space."""
        return self._key_base + KEYS[site]

    def _all_devices_sum(self, per_device, key):
        """per_device[i]: a tensor on local device i; its sum over every device
        of the cluster, on each local device."""
        out = []
        for i, (device, tensor) in enumerate(zip(self.devices, per_device)):
            def build(i=i, device=device, tensor=tensor):
                with tf.device(device):
                    return [private_api.collective_all_reduce(
                        tensor, self.group_size, self.all_devices_group, key, merge_op="Add",
                        final_op="Id", timeout=self.timeout,
                        ordering_token=self._tokens[i].handle,
                        communication_hint=self._hint(device))]
            out.extend(self._chains.run([device], build))
        return out

    def _workers_reduce(self, tensor, key):
        """A scalar reduced over one CPU member per worker (on /cpu:0)."""
        if self.num_workers == 1:
            return tensor
        with tf.device("/cpu:0"):
            return private_api.collective_all_reduce(
                tensor, self.num_workers, WORKERS_GROUP, key, merge_op="Add",
                final_op="Id", timeout=self.timeout, ordering_token=self._tokens[-1].handle,
                communication_hint="ring")

    def cluster_count(self, count):
        """The step's examples over every worker's towers, before the towers
        (the loss denominator where the count cannot wait for the tail: see
        engine/step/train_step.py, half-precision compute)."""
        return self._workers_reduce(count, self._key("count"))

    def cluster_tail(self, finite, loss, count, stops):
        """One collective of [loss, non-finite workers, examples, stop
        requests] over every worker: whether all losses and gradients are
        finite (so all workers take the same branch), the loss, the example
        count (the update's rescale, nominal / count) and how many workers
        asked to stop. The step's only scalar exchange: it needs no gradient
        pack's sum, so it runs beside them, not after. Always four values, so
        its instance key keeps one shape (a step whose count went ahead of
        the towers passes zeros)."""
        tail = self._workers_reduce(
            tf.stack([tf.cast(loss, tf.float32), 1.0 - tf.cast(finite, tf.float32),
                      tf.cast(count, tf.float32), tf.cast(stops, tf.float32)]),
            self._key("tail"))
        # Counts travel as float32: exact below 2**24 examples per step.
        return (tail[1] < 0.5, tail[0], tf.cast(tf.round(tail[2]), tf.int32),
                tf.cast(tf.round(tail[3]), tf.int32))

    def _packed_sum(self, per_device_lists, key):
        """Sums lists of tensors (one list per local device) over the cluster:
        packed per dtype into one flat tensor per device, one collective each."""
        first = per_device_lists[0]
        dtypes = sorted({t.dtype for t in first}, key=lambda d: d.name)
        results = [list(values) for values in per_device_lists]
        for j, dtype in enumerate(dtypes):
            index = [k for k, t in enumerate(first) if t.dtype == dtype]
            packs = []
            for i, device in enumerate(self.devices):
                with tf.device(device):
                    packs.append(tf.concat([tf.reshape(per_device_lists[i][k], [-1])
                                            for k in index], 0))
            summed = self._all_devices_sum(packs, key + j)
            for i, device in enumerate(self.devices):
                with tf.device(device):
                    sizes = [int(tf.size(first[k])) if first[k].shape.is_fully_defined()
                             else tf.size(first[k]) for k in index]
                    parts = tf.split(summed[i], sizes)
                    for k, part in zip(index, parts):
                        results[i][k] = tf.reshape(part, tf.shape(first[k]))
        return results

    def _gradient_sum(self, per_device_lists, riders=None):
        """Each pack summed over the cluster on its own (flat or hierarchical).
        riders: a flat float32 vector per device summed in pack 0 too (the
        batch-norm statistics); returns (per-device gradients, per-device
        summed riders or None)."""
        packs = packing.plan_for_exchange(per_device_lists[0], self.options)
        if riders is not None and packs[0].dtype != riders[0].dtype:
            riders = None  # pack 0 of another dtype (--fp16_vars): apply sums them
        summed = [[] for _ in self.devices]
        rode = None
        for k, p in enumerate(packs):
            with tf.name_scope(f"pack{k}"):
                flats = []
                for i, (device, grads) in enumerate(zip(self.devices, per_device_lists)):
                    with tf.device(device):
                        flat = packing.gather(grads, p)
                        if k == 0 and riders is not None:
                            flat = tf.concat([flat, riders[i]], 0)
                        flats.append(flat)
                # TensorFlow fixes an instance's shape for the life of the process:
                # each (pack count, pack) has its own key, the same on every worker.
                key = self._key("grads") + len(packs) * (len(packs) - 1) // 2 + k
                if self.local == "scatter":
                    sums = self._scattered_sum(flats, key)
                elif self.local:
                    sums = self._hierarchical_sum(flats, key)
                else:
                    sums = self._all_devices_sum(flats, key)
                if k == 0 and riders is not None:
                    size = packing.pack_size(p)
                    rode = []
                    for i, device in enumerate(self.devices):
                        with tf.device(device):
                            rode.append(sums[i][size:])
                            sums[i] = sums[i][:size]
            for i, flat in enumerate(sums):
                summed[i].append(flat)
        out = []
        for device, flats, grads in zip(self.devices, summed, per_device_lists):
            with tf.device(device):
                out.append(packing.scatter(flats, packs, grads))
        return out, rode

    def _hierarchical_sum(self, flats, key):
        """Summed on this worker, then across workers from one member each
        (one worker: the local sum is the sum), then on every local device."""
        member = member_device(self.devices, self.local)
        if self.local == "nccl" and len(self.devices) > 1:
            local = self._chains.run(self.devices,
                                     lambda: local_sum(flats, self.devices, self.local))
        else:
            local = local_sum(flats, self.devices, self.local)
        if self.num_workers == 1 and len(local) == len(self.devices):
            return local  # nccl: every GPU already holds the sum
        total = local[0]
        if self.num_workers > 1:
            total = self._chains.run([member], lambda: [self._cross_worker_sum(
                local[0], member, CROSS_WORKER_GROUP[device_type(member)],
                self._token_on(member), key)])[0]
        out = []
        for i, device in enumerate(self.devices):
            # Each GPU's own NCCL output is a control input of its copy of the
            # cluster's sum: the member that crosses alone feeds the values,
            # the others must still run (see local_sum).
            with tf.device(device), tf.control_dependencies(
                    [local[i].op] if 0 < i < len(local) else []):
                out.append(tf.identity(total))
        return out

    def _scattered_sum(self, flats, key):
        """scatter/xring: reduce-scatter in the worker, each shard across
        workers from its own device, all-gather in the worker."""
        gpus = is_gpu(self.devices[0]) and len(self.devices) > 1  # one device: no local step
        length = int(flats[0].shape[0])
        if gpus:
            shards, width = self._nccl_reduce_scatter(flats, key)
        else:
            shards = self._add_n_reduce_scatter(flats)
        if self.num_workers > 1:
            # Shard i crosses from device i, with device i of every worker.
            shards = [None if shard is None else self._chains.run(
                [device], lambda i=i, device=device, shard=shard: [self._cross_worker_sum(
                    shard, device, shard_group(device, len(self.devices), i),
                    self._tokens[i], key)])[0]
                for i, (device, shard) in enumerate(zip(self.devices, shards))]
        if gpus:
            return self._nccl_gather(shards, key, length, width)
        out = []
        for device in self.devices:
            with tf.device(device):
                out.append(tf.concat([s for s in shards if s is not None], 0))
        return out

    def _add_n_reduce_scatter(self, flats):
        """CPU devices (no ring reduce-scatter in TensorFlow): shard i is the
        add_n on device i of every device's slice of it, each sliced on its
        own device so only the shard travels. None for an empty shard."""
        shards, start = [], 0
        for device, size in zip(self.devices, shard_sizes(int(flats[0].shape[0]),
                                                          len(self.devices))):
            if not size:
                shards.append(None)
                continue
            pieces = []
            for source, flat in zip(self.devices, flats):
                with tf.device(source):
                    pieces.append(flat[start:start + size])
            with tf.device(device):
                shards.append(tf.add_n(pieces))
            start += size
        return shards

    def _local_group(self, base):
        """The group key of this worker's own GPUs (group keys are global to
        the cluster, so each worker task needs its own)."""
        return base + 1000 * len(self.devices) + self.task

    def _nccl_reduce_scatter(self, flats, key):
        """GPUs: one CollectiveReduceScatterV2 (nccl) per GPU over this
        worker's GPUs, the pack padded with zeros to L equal shards.
        Returns (the shards, the shard width)."""
        count = len(self.devices)
        length = int(flats[0].shape[0])
        width = -(-length // count)

        def build():
            out = []
            for i, (device, flat) in enumerate(zip(self.devices, flats)):
                with tf.device(device):
                    padded = tf.pad(flat, [[0, width * count - length]])
                    out.append(private_api.collective_reduce_scatter(
                        padded, count, self._local_group(LOCAL_SCATTER_GROUP_BASE), key,
                        ordering_token=self._tokens[i].handle, communication_hint="nccl"))
            return out
        return self._chains.run(self.devices, build), width

    def _nccl_gather(self, shards, key, length, width):
        """GPUs: one CollectiveGatherV2 (nccl) per GPU of the summed shards;
        each GPU keeps the pack's first `length` values (the rest is padding)."""
        count = len(self.devices)

        def build():
            out = []
            for i, (device, shard) in enumerate(zip(self.devices, shards)):
                with tf.device(device):
                    out.append(private_api.collective_all_gather(
                        tf.reshape(shard, [width]), count,
                        self._local_group(LOCAL_GATHER_GROUP_BASE), key,
                        ordering_token=self._tokens[i].handle, communication_hint="nccl"))
            return out
        gathered = self._chains.run(self.devices, build)
        out = []
        for device, whole in zip(self.devices, gathered):
            with tf.device(device):
                out.append(whole[:length])
        return out

    def _cross_worker_sum(self, tensor, device, group, token, key):
        """`tensor` on `device` summed with its peers of `group` (one device per
        worker, group size = workers) by --collective_implementation, after
        `token`'s device's earlier collectives."""
        with tf.device(device):
            return private_api.collective_all_reduce(
                tensor, self.num_workers, group, key,
                merge_op="Add", final_op="Id", timeout=self.timeout,
                ordering_token=token.handle,
                communication_hint=self._hint(device))

    def _from_chief(self, per_device_lists, source_device, key):
        """Every device gets local device `source_device`'s values on worker 0:
        all other members contribute zeros (x + 0 is exact)."""
        masked = []
        for i, device in enumerate(self.devices):
            with tf.device(device):
                keep = self.task == 0 and i == source_device
                masked.append([v if keep else tf.zeros_like(v) for v in per_device_lists[i]])
        return self._packed_sum(masked, key)

    def _broadcast_from_chief(self):
        """Identical start on every worker: copies take worker 0's initial values."""
        variables = [t + n for t, n in zip(self._trainable, self._non_trainable)]
        if not variables[0]:
            return

        @tf.function
        def broadcast():
            values = []
            for i, device in enumerate(self.devices):
                with tf.device(device):
                    values.append([tf.identity(v.value) for v in variables[i]])
            new = self._from_chief(values, 0, self._key("broadcast"))
            for i, device in enumerate(self.devices):
                with tf.device(device):
                    for variable, value in zip(variables[i], new[i]):
                        variable.assign(value)
        broadcast()

    # -- the update -------------------------------------------------------

    def exchange(self, tower_grads, tower_non_trainable=None):
        grads = [g if g is not None else self._zeros(i) for i, g in enumerate(tower_grads)]
        with tf.name_scope("collective_allreduce"):
            riders, layout = self._stats_riders(tower_non_trainable)
            summed, rode = self._gradient_sum(grads, riders)
            stats = None
            if rode is not None:
                stats = []
                for device, flat in zip(self.devices, rode):
                    with tf.device(device):
                        parts = tf.split(flat, [int(np.prod(shape)) for shape in layout])
                        stats.append([tf.reshape(part, shape)
                                      for part, shape in zip(parts, layout)])
            return Exchanged(summed, stats)

    def _stats_riders(self, tower_non_trainable):
        """Multi-worker: each device's batch-norm statistics as one float32
        vector, global tower 0's on worker 0 and zeros elsewhere, to be summed
        in the first gradient pack: every device then gets global tower 0's
        bits (x + 0 is exact) without a collective of their own after the
        packs. (None, None) where there are none, or one worker."""
        if (self.num_workers == 1 or tower_non_trainable is None
                or all(n is None for n in tower_non_trainable)):
            return None, None
        source = stats_tower(tower_non_trainable)
        stats = tower_non_trainable[source]
        if not stats or any(v.dtype != tf.float32 for v in stats):
            return None, None
        layout = [tuple(v.shape) for v in stats]
        riders = []
        for i, device in enumerate(self.devices):
            with tf.device(device):
                flat = tf.concat([tf.reshape(v, [-1]) for v in stats], 0)
                keep = self.task == 0 and i == source
                riders.append(tf.identity(flat) if keep else tf.zeros_like(flat))
        return riders, layout

    def apply(self, tower_grads, tower_non_trainable, grad_scale=None):
        summed = self._summed(tower_grads)
        with tf.name_scope("collective_allreduce"):
            source = stats_tower(tower_non_trainable)
            stats = [n if n is not None else tower_non_trainable[source]
                     for n in tower_non_trainable]
            if isinstance(tower_grads, Exchanged) and tower_grads.stats is not None:
                stats = tower_grads.stats  # summed in the first gradient pack
            elif self.num_workers > 1 and stats[0]:
                stats = self._from_chief(stats, source, self._key("stats"))
            else:
                stats = [stats[source]] * len(self.devices)
        for i, device in enumerate(self.devices):
            with tf.device(device):
                grads_i = summed[i]
                if grad_scale is not None:  # float16 gradients with --fp16_vars
                    grads_i = [g / tf.cast(grad_scale, g.dtype) for g in grads_i]
                self._update(i, self.clip(grads_i), stats[i])
        return None
