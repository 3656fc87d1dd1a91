"""Checks of the input flags against the dataset they will read, before any
input is built (the dataset is the model's default when --data_name is not
given, so Params alone cannot tell)."""
from towertrain.config.runtime_checks import INTERLEAVE_FLAGS
from towertrain.errors import ParamsError


def check(params, dataset):
    """Raises ParamsError naming a flag the run's input would ignore."""
    if params.data_dir is None:
        _refuse_preprocessing_flags(params)
    elif dataset == "cifar10":
        _refuse_interleave_flags(params)
        if params.resize_method is not None:
            raise ParamsError(f"--resize_method={params.resize_method}: only applies to "
                              "imagenet (cifar10 images are used as stored, 32x32); drop it")


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
    for flag in INTERLEAVE_FLAGS:
        value = getattr(params, flag)
        if value not in (None, False):
            raise ParamsError(f"--{flag}={value}: only applies to imagenet's TFRecord shards "
                              "(cifar10 reads its binary files in order); drop it")
