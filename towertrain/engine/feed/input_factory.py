"""The input a run plan asks for: synthetic, or a dataset under --data_dir."""
from towertrain.input_pipeline import cifar10, dataset_options, imagenet, queue_input
from towertrain.errors import InputError
from towertrain.input_pipeline.base import WrappedInput
from towertrain.input_pipeline.slicing import WorkerShare
from towertrain.input_pipeline.synthetic import SyntheticInput


def image_size_of(image_shape, data_format):
    """Height of a model input shape given without the batch dimension."""
    return image_shape[1] if data_format == "NCHW" else image_shape[0]


def make_input(input_plan, topology, image_shape, num_classes, per_process_batch,
               train=True):
    """Synthetic data without --data_dir; else the --data_name reader, fed by
    tf.data (--input=dataset) or by threads through a FIFOQueue (--input=queue).

    input_plan, topology: the run plan's sections (towertrain.plan).
    per_process_batch: this process's examples per step. Multi-worker
    (towertrain.engine.distributed.cluster), a reader reads the cluster's
    global batches and decodes only this worker's contiguous share of each
    (slicing.WorkerShare); synthetic data is made per worker, each tower's
    from the seed and its global tower index. train=False (--eval): a reader
    of the eval split alone, so a folder of only the eval files evaluates."""
    cluster = topology.cluster
    if input_plan.synthetic:
        synthetic = SyntheticInput(image_shape=image_shape, num_classes=num_classes,
                                   global_batch=per_process_batch,
                                   seed=input_plan.seed,
                                   tower_indices=topology.global_tower_indices)
        return input_for_worker(synthetic, cluster, local=True)
    share = None
    if cluster.num_workers > 1:
        if input_plan.input == "queue":
            raise InputError(
                f"--input=queue: not with {cluster.num_workers} workers: its feeder "
                "augments one epoch's examples from one random stream in order, so a "
                "worker could not decode only its share of each global batch; use "
                "--input=dataset (each worker then decodes only its share)")
        share = WorkerShare(cluster.num_workers, cluster.task_index, topology.num_towers)
    return input_for_worker(_reader(input_plan, image_shape, num_classes,
                                    per_process_batch * cluster.num_workers,
                                    topology.data_format, share, train), cluster)


def dataset_options_of(input_plan):
    """The DatasetOptions of the plan's --datasets_* values."""
    return dataset_options.DatasetOptions(
        use_prefetch=input_plan.datasets_use_prefetch,
        prefetch_buffer_size=input_plan.datasets_prefetch_buffer_size,
        num_private_threads=input_plan.datasets_num_private_threads,
        use_caching=input_plan.datasets_use_caching,
        interleave_cycle_length=input_plan.datasets_parallel_interleave_cycle_length,
        sloppy_interleave=input_plan.datasets_sloppy_parallel_interleave,
        interleave_prefetch=input_plan.datasets_parallel_interleave_prefetch,
        repeat_cached_sample=input_plan.datasets_repeat_cached_sample)


def _reader(input_plan, image_shape, num_classes, global_batch, data_format, share=None,
            train=True):
    # The data repeats without end: the loop stops at the planned step, so a
    # finished --num_epochs run resumed with more epochs simply continues.
    common = dict(global_batch=global_batch, num_epochs=None,
                  seed=input_plan.seed, data_format=data_format,
                  distortions=input_plan.distortions)
    name, data_dir = input_plan.data_name, input_plan.data_dir
    options = dataset_options_of(input_plan)
    if input_plan.input == "queue" and train:  # evaluation reads through tf.data either way
        return queue_input.from_data_dir(name, data_dir, image_shape, **common)
    if name == "cifar10":
        return cifar10.dataset_input(data_dir, options=options, share=share, train=train,
                                     **common)
    return imagenet.dataset_input(data_dir, image_size=image_size_of(
        image_shape, data_format), num_classes=num_classes,
        resize_method=input_plan.resize_method or "bilinear", options=options,
        share=share, train=train, **common)


class WorkerInput(WrappedInput):
    """One worker's part of a multi-worker input: the Input that wraps the
    run's input and yields this worker's towers' batches (which rows of a
    global batch they take is the value slicing.WorkerShare describes).

    A reader built with this worker's WorkerShare (the files' readers)
    yields only the worker's rows of each global batch, decoded; they are
    split over its local devices, which gives each tower the rows a process
    holding every device would give it. Any other input (the
    user's) yields the cluster's global batch (the same sequence on every
    worker): it is split into workers x local devices tower slices as one
    process would split it, and worker k keeps towers k*L .. k*L+L-1. Either
    way every example is trained once per epoch across the cluster, uneven
    last batches included, and the run equals the single-process one.

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
        if self.local or getattr(self.inner, "worker_share", None) is not None:
            return self.inner.tower_batches(devices)
        count = len(devices)
        start = self.task_index * count
        # Other workers' slices go to this worker's CPU and are never used:
        # tf.function prunes them.
        everyone = (["/cpu:0"] * start + list(devices) +
                    ["/cpu:0"] * ((self.num_workers - self.task_index - 1) * count))
        return self.inner.tower_batches(everyone)[start:start + count]



def describe_worker_input(input_source):
    """What this worker of a multi-worker run reads and decodes (the header)."""
    worker_input = input_source
    while worker_input is not None and not isinstance(worker_input, WorkerInput):
        worker_input = getattr(worker_input, "inner", None)
    if worker_input is None:
        return "this worker's own input"
    if worker_input.local:
        return "its own synthetic share of each global batch (each tower's by its global index)"
    share = getattr(worker_input.inner, "worker_share", None)
    if share is not None:
        return (f"reads every record, decodes only its share of each global batch "
                f"({share.describe()})")
    return "reads and decodes every global batch, keeps its towers' share"


def input_for_worker(inner, cluster, local=False):
    """`inner` for this worker of `cluster` (unchanged in a one-process run)."""
    if cluster.num_workers == 1 or isinstance(inner, WorkerInput):
        return inner
    return WorkerInput(inner, cluster.num_workers, cluster.task_index, local=local)
