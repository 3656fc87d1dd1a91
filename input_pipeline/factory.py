"""The input a run's Params ask for: synthetic, or a dataset under --data_dir."""
from .synthetic import SyntheticInput


def image_size_of(image_shape, data_format):
    """Height of a model input shape given without the batch dimension."""
    return image_shape[1] if data_format == "NCHW" else image_shape[0]


def make_input(params, image_shape, num_classes, global_batch, data_format, dataset_name):
    """Synthetic data without --data_dir; else the --data_name reader, fed by
    tf.data (--input=dataset) or by threads through a FIFOQueue (--input=queue)."""
    if params.data_dir is None:
        return SyntheticInput(image_shape=image_shape, num_classes=num_classes,
                              global_batch=global_batch, seed=params.tf_random_seed)
    # The data repeats without end: the loop stops at the planned step, so a
    # finished --num_epochs run resumed with more epochs simply continues.
    common = dict(global_batch=global_batch, num_epochs=None,
                  seed=params.tf_random_seed, data_format=data_format)
    name = dataset_name
    if params.input == "queue":
        from . import queue_input
        return queue_input.from_data_dir(name, params.data_dir, image_shape, **common)
    if name == "cifar10":
        from . import cifar10
        return cifar10.dataset_input(params.data_dir, **common)
    from . import imagenet
    return imagenet.dataset_input(params.data_dir, image_size=image_size_of(
        image_shape, data_format), num_classes=num_classes, **common)
