"""The input a run's Params ask for: synthetic, or a dataset under --data_dir."""
from towertrain.errors import ParamsError
from towertrain.input_pipeline import dataset_options
from towertrain.input_pipeline.base import WrappedInput
from towertrain.input_pipeline.synthetic import SyntheticInput


def image_size_of(image_shape, data_format):
    """Height of a model input shape given without the batch dimension."""
    return image_shape[1] if data_format == "NCHW" else image_shape[0]


def make_input(params, image_shape, num_classes, global_batch, data_format, dataset_name):
    """Synthetic data without --data_dir; else the --data_name reader, fed by
    tf.data (--input=dataset) or by threads through a FIFOQueue (--input=queue).

    global_batch: this process's examples per step. Multi-worker
    (towertrain.engine.distributed.cluster), a reader yields the cluster's global batch and each
    worker trains on its contiguous share (WorkerShard); synthetic data is
    made per worker with the seed shifted by the task index."""
    from towertrain.engine.distributed import cluster as cluster_lib
    cluster = cluster_lib.for_params(params)
    if params.data_dir is None:
        _refuse_preprocessing_flags(params)
        synthetic = SyntheticInput(image_shape=image_shape, num_classes=num_classes,
                                   global_batch=global_batch,
                                   seed=params.tf_random_seed + 7919 * cluster.task_index)
        return shard_for_worker(synthetic, cluster, local=True)
    return shard_for_worker(_reader(params, image_shape, num_classes,
                                    global_batch * cluster.num_workers, data_format,
                                    dataset_name), cluster)


def _reader(params, image_shape, num_classes, global_batch, data_format, dataset_name):
    # The data repeats without end: the loop stops at the planned step, so a
    # finished --num_epochs run resumed with more epochs simply continues.
    common = dict(global_batch=global_batch, num_epochs=None,
                  seed=params.tf_random_seed, data_format=data_format,
                  distortions=params.distortions)
    name = dataset_name
    options = dataset_options.from_params(params)
    if name == "cifar10":
        _refuse_interleave_flags(params)
        if params.resize_method is not None:
            raise ParamsError(f"--resize_method={params.resize_method}: only applies to "
                              "imagenet (cifar10 images are used as stored, 32x32); drop it")
    if params.input == "queue":
        from towertrain.input_pipeline import queue_input
        return queue_input.from_data_dir(name, params.data_dir, image_shape, **common)
    if name == "cifar10":
        from towertrain.input_pipeline import cifar10
        return cifar10.dataset_input(params.data_dir, options=options, **common)
    from towertrain.input_pipeline import imagenet
    return imagenet.dataset_input(params.data_dir, image_size=image_size_of(
        image_shape, data_format), num_classes=num_classes,
        resize_method=params.resize_method or "bilinear", options=options, **common)


def _refuse_preprocessing_flags(params):
    """Synthetic data is made at the model's input size on the devices: asking
    it to be resized or distorted would change nothing, so it is an error."""
    why = ("synthetic data is generated at the model's input size and never resized or "
           "distorted; drop it, or train on files with --data_dir")
    if params.resize_method is not None:
        raise ParamsError(f"--resize_method={params.resize_method}: {why}")
    if params.distortions:
        raise ParamsError(f"--distortions: {why}")


def _refuse_interleave_flags(params):
    from towertrain.config.runtime_checks import INTERLEAVE_FLAGS
    for flag in INTERLEAVE_FLAGS:
        value = getattr(params, flag)
        if value not in (None, False):
            raise ParamsError(f"--{flag}={value}: only applies to imagenet's TFRecord shards "
                              "(cifar10 reads its binary files in order); drop it")


class WorkerShard(WrappedInput):
    """One worker's part of a multi-worker input.

    Slicing (the default): the inner input yields the cluster's global batch
    (the same sequence on every worker: same files, same seed); it is split
    into workers x local devices tower slices exactly as one process holding
    every device would split it, and worker k keeps towers k*L .. k*L+L-1.
    So every example is trained once per epoch across the cluster, uneven
    last batches included, and the run equals the single-process one. (Each
    worker reads and decodes the whole global batch; sharding before decoding
    is not done yet.)

    local=True: the inner input already holds this worker's own data
    (synthetic); its global batch is scaled by the number of workers.
    """

    def __init__(self, inner, num_workers, task_index, local=False):
        super().__init__(inner)
        self.num_workers = num_workers
        self.task_index = task_index
        self.local = local
        self.name = inner.name
        self.stage = inner.stage
        self.description = inner.description
        self.num_examples = None if local else inner.num_examples
        self.global_batch = (inner.global_batch * num_workers if local and inner.global_batch
                             else inner.global_batch)

    def create(self, devices):
        self.inner.create(devices)

    def tower_batches(self, devices):
        if self.local:
            return self.inner.tower_batches(devices)
        count = len(devices)
        start = self.task_index * count
        # Other workers' slices go to this worker's CPU and are never used:
        # tf.function prunes them.
        everyone = (["/cpu:0"] * start + list(devices) +
                    ["/cpu:0"] * ((self.num_workers - self.task_index - 1) * count))
        return self.inner.tower_batches(everyone)[start:start + count]



def shard_for_worker(inner, cluster, local=False):
    """`inner` for this worker of `cluster` (unchanged in a one-process run)."""
    if cluster.num_workers == 1 or isinstance(inner, WorkerShard):
        return inner
    return WorkerShard(inner, cluster.num_workers, cluster.task_index, local=local)
