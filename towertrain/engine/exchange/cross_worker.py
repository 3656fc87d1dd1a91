"""collective_all_reduce's exchange: each pack summed over every device of
every worker, by --all_reduce_spec:

- collective (flat; the GPU default, as MultiWorkerMirroredStrategy): one
  `CollectiveReduceV2` per pack per device over all devices of the cluster
  (group size = workers x local devices). On GPUs NCCL runs it with several
  channels, each crossing machines through its own NIC, and trees for small
  packs;
- local/xring (hierarchical; pscpu/xring is the CPU default): the pack is
  summed on the worker first by the local algorithm (pscpu on /cpu:0, psgpu
  on the first GPU, nccl), then one cross-worker collective per pack from that
  one member per worker, and the sum is copied back to every local device;
- scatter/xring (Horovod's shape): a reduce-scatter inside the worker leaves
  local device i the worker's sum of shard i of the pack; device i
  all-reduces its shard across workers in a group of device i of every
  worker; an all-gather inside the worker gives every device the whole sum.
  On GPUs the reduce-scatter and the gather are NCCL collectives over one
  group of this worker's GPUs, the pack padded to equal shards; on CPU
  devices the reduce-scatter is an add_n per shard on its device and the
  gather a concat. NCCL hands shard r to rank r, and TensorFlow ranks a
  worker's GPUs by their links: machines must be alike.

With --compact_gradient_transfer every spec sends each gradient pack in half
precision (exchange.compact): each device casts its pack, every sum of the
spec (local, across workers, shards) adds half-precision values, and each
device casts the cluster's sum back, as compact.CompactTransfer does in one
process. The extra values (batch-norm statistics, the step's scalars) stay
float32, in a pack of their own. A float16 sum that overflows is inf on
every device of every worker (the same bits), so every copy skips the step
by its own finite check, as for any non-finite sum.

What makes this safe:
- all of a process's collective launches come from the one step tf.function;
- each local member passes its own `ordering_token`: without it the members
  are chained in program order and the group never forms;
- on a GPU every collective waits for the one built before it there
  (ordering.DeviceChains): one launch order per GPU, the same on every worker;
- every group the step uses is opened before step 1, one after the other in
  one fixed order (open_groups): a multi-node NCCL communicator is created
  under TensorFlow's one NcclManager lock per process and waits for every
  rank, so two workers creating two groups in different orders would wait on
  each other for ever;
- group and instance keys are constants per call site (keys.py), so a retrace
  on one worker gives the same keys as on the others.
"""
import tensorflow as tf

from towertrain import private_api

from . import base, flow, packing
from .keys import (ALL_DEVICES_GROUP_BASE, CROSS_WORKER_GROUP, KEYS, LOCAL_GROUP_BASE,
                   WORKERS_GROUP, key_space, shard_group)
from .ordering import DeviceChains, device_type, is_gpu


def shard_sizes(length, parts):
    """The lengths of the contiguous shards of a pack of `length` values over
    `parts` local devices: as equal as can be, the first length % parts one
    longer (zero-length shards where length < parts)."""
    base_size, longer = divmod(length, parts)
    return [base_size + (i < longer) for i in range(parts)]


class ClusterExchange:
    """Sums packs over the cluster. exchange: the plan's Exchange section;
    devices: this worker's towers; cluster: the cluster this process joined."""

    def __init__(self, exchange, devices, cluster, timeout):
        self.options, self.devices, self.cluster = exchange, list(devices), cluster
        self.num_workers, self.task = cluster.num_workers, cluster.task_index
        self.group_size = self.num_workers * len(self.devices)
        # One group per size: TensorFlow fixes a group key's size for the life of
        # the process, so trainers of different device counts need their own keys.
        self.all_devices_group = ALL_DEVICES_GROUP_BASE + self.group_size
        self.timeout = timeout
        self.local = exchange.local_algorithm
        self.local_algorithm = (base.create(self.local)
                                if self.local not in (None, "scatter") else None)
        self.implementation = exchange.collective_implementation  # 'nccl' or 'ring'
        self.wire_dtype = (tf.as_dtype(exchange.compact_transfer_dtype)
                           if exchange.compact_transfer_dtype else None)
        self._chains = DeviceChains()

    def create(self, variables):
        """Eager, once: the key space of this model and the ordering tokens."""
        self._key_base = key_space(variables, self.wire_dtype)
        self._tokens = []
        for device in self.devices + ["/cpu:0"]:
            with tf.device(device):
                self._tokens.append(tf.Variable(0.0, trainable=False, name="ordering_token"))
        # On a CPU member, the gradient packs' own chain, so their collectives
        # wait for nothing else. A GPU keeps one chain (ordering.py).
        self._pack_token = None
        if (self.local_algorithm is not None
                and not is_gpu(self.local_algorithm.sum_device(self.devices))):
            with tf.device(self.local_algorithm.sum_device(self.devices)):
                self._pack_token = tf.Variable(0.0, trainable=False, name="pack_token")

    def key(self, site):
        """The instance key of a call site, in this model's key space."""
        return self._key_base + KEYS[site]

    # -- groups -------------------------------------------------------------

    def groups(self):
        """(group key, group size, local member indices) of every group the
        step uses besides the start-up one, in the order open_groups() opens
        them: the key's order, the same on every worker. A member index is a
        local device's, or len(devices) for /cpu:0."""
        count, found = len(self.devices), {}
        cpu = count
        if self.local is None:
            found[self.all_devices_group] = (self.group_size, list(range(count)))
        elif self.local == "scatter":
            if is_gpu(self.devices[0]) and count > 1:
                found[self._local_group()] = (count, list(range(count)))
            if self.num_workers > 1:
                for i, device in enumerate(self.devices):
                    found[shard_group(device, count, i)] = (self.num_workers, [i])
        elif self.num_workers > 1:
            member = self.local_algorithm.sum_device(self.devices)  # crosses workers
            index = cpu if member == "/cpu:0" else self.devices.index(member)
            found[CROSS_WORKER_GROUP[device_type(member)]] = (self.num_workers, [index])
        if self.num_workers > 1 and self.options.sync_batch_norm:
            # The batch moments cross from the lockstep's sum on local device 0.
            found[CROSS_WORKER_GROUP[device_type(self.devices[0])]] = (self.num_workers, [0])
        if self.num_workers > 1:
            found[WORKERS_GROUP] = (self.num_workers, [cpu])  # half precision's count
        return [(key, size, members) for key, (size, members) in sorted(found.items())
                if size > 1]

    def start(self, copies):
        """Eager, before step 1, with every peer: every group the step uses is
        opened, each after the one before, so every communicator exists before
        step 1, created in the same order on every worker; then every copy
        takes worker 0's values (copies[i]: local device i's variables)
        through those groups (build_broadcast), which opens no other."""
        self.opener = self.build_opener()
        if self.opener is not None:
            self.opener()
        broadcast = self.build_broadcast(copies)
        if broadcast is not None:
            broadcast()

    def build_opener(self):
        """The tf.function running a one-element collective in every group of
        groups(), in order, each group's members waiting for the group before."""
        groups = self.groups()
        if not groups:
            return None

        @tf.function(autograph=False)
        def open_all():
            previous = []
            for n, (group, size, members) in enumerate(groups):
                with tf.control_dependencies(previous):
                    previous = [self._one(group, size, index, self.key("open") + n)
                                for index in members]
            return previous
        return open_all

    def build_broadcast(self, copies):
        """The tf.function giving every copy worker 0's local device 0's
        values, summed as the step sums its packs (from_chief), or None
        when there is nothing to copy."""
        if not copies[0]:
            return None

        @tf.function(autograph=False)
        def broadcast():
            values = []
            for i, device in enumerate(self.devices):
                with tf.device(device):
                    values.append([tf.identity(v.value) for v in copies[i]])
            new = self.from_chief(values, 0, self.key("broadcast"))
            for i, device in enumerate(self.devices):
                with tf.device(device):
                    for variable, value in zip(copies[i], new[i]):
                        variable.assign(value)
        return broadcast

    def _one(self, group, size, index, key):
        device = self.devices[index] if index < len(self.devices) else "/cpu:0"
        with tf.device(device):
            return private_api.collective_all_reduce(
                tf.ones([1]), size, group, key, timeout=self.timeout,
                ordering_token=self._tokens[index].handle, communication_hint=self._hint(device))

    def _local_group(self):
        """The group of this worker's own GPUs (group keys are global to the
        cluster, so each worker task needs its own): the reduce-scatter and
        the gather share it, and so one NCCL communicator."""
        return LOCAL_GROUP_BASE + 1000 * len(self.devices) + self.task

    def _hint(self, device):
        """The communication hint of a collective on `device`: NCCL needs GPUs."""
        return self.implementation if is_gpu(device) else "ring"

    def _token_on(self, device):
        """The ordering token of a cross-worker member on `device`."""
        if self._pack_token is not None:
            return self._pack_token
        return self._tokens[self.devices.index(device)]

    # -- the exchange --------------------------------------------------------

    def exchange(self, per_device, extra_values=None, check=True):
        """flow.Exchanged of the gradient lists summed over the cluster."""
        packs = packing.plan_for_exchange(per_device[0], self.options)
        half = self.wire_dtype

        def sum_pack(k, flats):
            if k == len(packs):  # the extra values' own float32 pack
                return self._spec_sum(flats, self.key("apart") + len(packs))
            # TensorFlow fixes an instance's shape for the life of the process:
            # each (pack count, pack) has its own key, the same on every worker.
            key = self.key("grads") + len(packs) * (len(packs) - 1) // 2 + k
            if half is None or flats[0].dtype == half:
                return self._spec_sum(flats, key)
            compact = []
            for device, flat in zip(self.devices, flats):
                with tf.device(device), tf.name_scope("compact"):
                    compact.append(tf.cast(flat, half))
            out = []
            for device, total, flat in zip(self.devices, self._spec_sum(compact, key), flats):
                with tf.device(device), tf.name_scope("expand"):
                    out.append(tf.cast(total, flat.dtype))
            return out
        return flow.exchange_packs(per_device, self.devices, packs, sum_pack, extra_values, check,
                                   extra_values_apart=half is not None)

    def _spec_sum(self, flats, key):
        """One pack (flats[i] on local device i) summed over the cluster by
        --all_reduce_spec, in the step's own groups."""
        if self.local == "scatter":
            return self._scattered_sum(flats, key)
        if self.local:
            return self._hierarchical_sum(flats, key)
        return self._all_devices_sum(flats, key)

    def packed_sum(self, per_device_lists, key):
        """Lists of tensors (one list per local device) summed over the
        cluster: packed per dtype, each pack summed as the step sums its
        gradient packs, so no group outside groups() is used (an all-device
        NCCL group would cost every GPU a communicator a hierarchical step
        never uses)."""
        packs = packing.plan(per_device_lists[0], 0)
        return flow.exchange_packs(
            per_device_lists, self.devices, packs,
            lambda k, flats: self._spec_sum(flats, key + k), check=False).per_device

    def from_chief(self, per_device_lists, source_device, key):
        """Every device gets local device `source_device`'s values on worker 0:
        all other members contribute zeros (x + 0 is exact)."""
        masked = []
        for i, device in enumerate(self.devices):
            with tf.device(device):
                keep = self.task == 0 and i == source_device
                masked.append([v if keep else tf.zeros_like(v) for v in per_device_lists[i]])
        return self.packed_sum(masked, key)

    def workers_sum(self, tensor):
        """A small tensor summed over one CPU member per worker (on /cpu:0)."""
        if self.num_workers == 1:
            return tensor
        with tf.device("/cpu:0"):
            return private_api.collective_all_reduce(
                tensor, self.num_workers, WORKERS_GROUP, self.key("count"), timeout=self.timeout,
                ordering_token=self._tokens[-1].handle, communication_hint="ring")

    def workers_max(self, values, site):
        """A few Python numbers at their maximum over the workers, eager,
        between steps, over one CPU member per worker (the step's scalars'
        group and chain); `site`: the call site's key (keys.KEYS)."""
        if self.num_workers == 1:
            return list(values)
        with tf.device("/cpu:0"):
            found = private_api.collective_all_reduce(
                tf.constant(values, tf.float64), self.num_workers, WORKERS_GROUP,
                self.key(site), merge_op="Max", timeout=self.timeout,
                ordering_token=self._tokens[-1].handle, communication_hint="ring")
        return found.numpy().tolist()

    def _all_devices_sum(self, per_device, key):
        """per_device[i]: a tensor on local device i; its sum over every device
        of the cluster, on each local device."""
        out = []
        for i, (device, tensor) in enumerate(zip(self.devices, per_device)):
            def build(i=i, device=device, tensor=tensor):
                with tf.device(device):
                    return [private_api.collective_all_reduce(
                        tensor, self.group_size, self.all_devices_group, key,
                        timeout=self.timeout, ordering_token=self._tokens[i].handle,
                        communication_hint=self._hint(device))]
            out.extend(self._chains.run([device], build))
        return out

    def _hierarchical_sum(self, flats, key):
        """Summed on this worker by the local algorithm, then across workers
        from one member each (one worker: the local sum is the sum), then
        copied to every local device."""
        if self.local == "nccl" and len(self.devices) > 1:
            summed = self._chains.run(
                self.devices, lambda: self.local_algorithm.sum_flats(flats, self.devices))
            if self.num_workers == 1:
                return summed  # every GPU already holds the sum
            member, total, others = self.devices[0], summed[0], summed[1:]
        else:
            member, total, others = self.local_algorithm.partial_sum(flats, self.devices)
        if self.num_workers > 1:
            total = self._chains.run([member], lambda: [self._cross_worker_sum(
                total, member, CROSS_WORKER_GROUP[device_type(member)],
                self._token_on(member), key)])[0]
        out = []
        for i, device in enumerate(self.devices):
            # Each GPU's own NCCL output is a control input of its copy of the
            # cluster's sum: the member that crosses alone feeds the values,
            # the others must still run (nccl.NcclAllReduce.partial_sum).
            with tf.device(device), tf.control_dependencies(
                    [others[i - 1].op] if 0 < i <= len(others) else []):
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
                        padded, count, self._local_group(), key,
                        ordering_token=self._tokens[i].handle, communication_hint="nccl"))
            return out
        return self._chains.run(self.devices, build), width

    def _nccl_gather(self, shards, key, length, width):
        """GPUs: one CollectiveGatherV2 (nccl) per GPU of the summed shards, in
        the reduce-scatter's group; each GPU keeps the pack's first `length`
        values (the rest is padding)."""
        count = len(self.devices)

        def build():
            out = []
            for i, (device, shard) in enumerate(zip(self.devices, shards)):
                with tf.device(device):
                    out.append(private_api.collective_all_gather(
                        tf.reshape(shard, [width]), count, self._local_group(),
                        key + KEYS["gather"] - KEYS["grads"], ordering_token=self._tokens[i].handle,
                        communication_hint="nccl"))
            return out
        gathered = self._chains.run(self.devices, build)
        out = []
        for device, whole in zip(self.devices, gathered):
            with tf.device(device):
                out.append(whole[:length])
        return out

    def lockstep_sum(self, tensors, point, device):
        """--sync_batch_norm: `tensors` (this worker's sums of one cross-tower
        point, on `device`, local device 0) summed over the workers, as one
        float32 vector; the gradient flows back through the same sum over the
        workers (every worker's loss reads the total)."""
        if self.num_workers == 1:
            return tensors
        token = self._tokens[self.devices.index(device)]
        group = CROSS_WORKER_GROUP[device_type(device)]
        key = self.key("moments") + 2 * point
        sizes = [int(t.shape.num_elements()) for t in tensors]
        shapes = [t.shape for t in tensors]

        def across(vector, instance):
            return self._chains.run([device], lambda: [self._cross_worker_sum(
                vector, device, group, token, instance)])[0]

        @tf.custom_gradient
        def summed(vector):
            return across(vector, key), lambda upstream: across(upstream, key + 1)

        with tf.device(device):
            flat = tf.concat([tf.reshape(tf.cast(t, tf.float32), [-1]) for t in tensors], 0)
            total = summed(flat)
            return [tf.reshape(tf.cast(part, t.dtype), shape) for part, t, shape in
                    zip(tf.split(total, sizes), tensors, shapes)]

    def _cross_worker_sum(self, tensor, device, group, token, key):
        """`tensor` on `device` summed with its peers of `group` (one device per
        worker) by --collective_implementation, after `token`'s device's
        earlier collectives."""
        with tf.device(device):
            return private_api.collective_all_reduce(
                tensor, self.num_workers, group, key, timeout=self.timeout,
                ordering_token=token.handle, communication_hint=self._hint(device))
