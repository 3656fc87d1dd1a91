"""The cluster shape a checkpoint was written by: global batch, workers, devices.

A train_dir's checkpoints carry it (under engine/topology/), so a resume knows
what changed. Workers x devices may change freely: with the same global
batch every step trains on the same examples in the same order (the input
position is that of the global batch sequence), so the run continues exactly.
A changed global batch is reported in the header: the run goes on from the
saved step count with the new batch (docs/clusters.md, "Restart on another topology").
"""
import tensorflow as tf

NAMES = ("global_batch", "workers", "devices_per_worker")


class RecordedTopology:
    """The run's topology as checkpoint variables, and what a restore found:
    the shape a checkpoint records (where the towers run is the plan's
    towertrain.plan.Topology; this is its count, saved and compared).

    global_batch: examples per step (update) of the whole cluster, its
    accumulated micro-batches together (--global_batch_size); workers: processes;
    devices_per_worker: towers in each (towertrain.plan: batches, topology)."""

    def __init__(self, global_batch, workers, devices_per_worker):
        self.current = (int(global_batch), int(workers), int(devices_per_worker))
        with tf.device("/cpu:0"):
            self._variables = [tf.Variable(value, dtype=tf.int64, trainable=False,
                                           name=f"topology_{name}")
                               for name, value in zip(NAMES, self.current)]
        self.saved = None  # the restored checkpoint's (global batch, workers, devices)

    def variables(self):
        """{name: variable} for the checkpoint's engine variables."""
        return {f"topology/{name}": v for name, v in zip(NAMES, self._variables)}

    def after_restore(self):
        """Reads what the restored checkpoint recorded (a checkpoint from before
        this was kept records nothing: taken as unchanged), then puts the
        current topology back for the next save."""
        self.saved = tuple(int(v.numpy()) for v in self._variables)
        for variable, value in zip(self._variables, self.current):
            variable.assign(value)

    @property
    def batch_changed(self):
        return self.saved is not None and self.saved[0] != self.current[0]

    def header_info(self, rate_changed=False):
        """The header's lines; rate_changed: the learning rate differs from the
        record's (then the run does not continue exactly, and says so)."""
        if self.saved is None or self.saved == self.current:
            return []
        (old_batch, old_workers, old_devices), (batch, workers, devices) = (
            self.saved, self.current)
        shape = (f"checkpoint written by {old_workers} worker(s) x {old_devices} device(s), "
                 f"now {workers} x {devices}")
        if not self.batch_changed:
            if rate_changed:
                return [("Topology", f"{shape}; same global batch {batch}, but the learning "
                                     "rate CHANGED (below), so it does not continue exactly")]
            return [("Topology", f"{shape}; same global batch {batch}: continues exactly")]
        return [("Topology", shape),
                ("Global batch", f"CHANGED at resume: {old_batch} in the checkpoint, now "
                                 f"{batch}; the saved step count goes on with the new batch "
                                 "(epoch boundaries, --num_epochs and schedule steps are "
                                 "counted in new-batch steps; docs/clusters.md, 'Restart "
                                 "on another topology')")]
