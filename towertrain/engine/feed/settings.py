"""The input's settings, declared beside the code that builds the input from
them (towertrain.engine.feed.input_factory: what to read, how, and what is
staged on the devices; the readers of towertrain.input_pipeline take the
values), with their refusals, and the plan's InputPlan section.
"""
import dataclasses
import os
from typing import Optional

from towertrain.config.declare import COMPARED, NOT_USED, section, setting, tfcnn
from towertrain.errors import ParamsError

DATA_NAMES = ("cifar10", "imagenet")
INPUTS = ("dataset", "queue")
RESIZE_METHODS = ("crop", "nearest", "bilinear", "bicubic", "area", "round_robin")


@section("Input pipeline (--data_dir with --input=dataset)")
class InputSettings:
    data_name: Optional[str] = setting(
        None, "Dataset name (default: the model's); sets the number of classes.",
        choices=DATA_NAMES, group="Model and data",
        tfcnn=tfcnn("string", None, "cifar10 and imagenet (coco and librispeech are not ported)"))
    data_dir: Optional[str] = setting(
        None, "Directory of the dataset's files (cifar10 binary batches or imagenet "
        "TFRecords); unset: synthetic data.",
        group="Model and data", scaling=NOT_USED, path=True, tfcnn=tfcnn("string", None))
    input: str = setting(
        "dataset", "With --data_dir: dataset (a tf.data pipeline) or queue (a FIFOQueue "
        "filled by threads).",
        choices=INPUTS, group="Model and data", scaling=NOT_USED, recorded=COMPARED)
    distortions: bool = setting(
        False, "Training augmentation: cifar10 random pad-4 crops and flips (off: "
        "none); imagenet adds color distortions to its always-on random crop "
        "and flip.",
        group="Model and data", training_only=True, scaling=NOT_USED, recorded=COMPARED,
        tfcnn=tfcnn("boolean", False))
    resize_method: Optional[str] = setting(
        None, "imagenet resize (default bilinear): nearest, bilinear, bicubic, "
        "area, round_robin (the four by example position) or crop (a "
        "random/central crop of the input size, no resize).",
        choices=RESIZE_METHODS, group="Model and data", scaling=NOT_USED, recorded=COMPARED,
        tfcnn=tfcnn("string", "bilinear"))
    staging_depth: int = setting(
        1, "With --data_dir: batches staged on each device ahead of compute; 0 "
        "turns staging off. Synthetic data is never staged.",
        group="Training", training_only=True, scaling=NOT_USED)
    batch_group_size: int = setting(
        1, "With staging (--staging_depth >= 1): put this many batches on each "
        "device at a time, every this many steps, instead of one per step "
        "(then it replaces --staging_depth).",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("integer", 1))
    num_examples_per_epoch: Optional[int] = setting(
        None, "Epoch length for synthetic data (default with --num_epochs or an "
        "epoch-based learning rate: the dataset's known size, ImageNet "
        "1,281,167, CIFAR-10 50,000); --data_dir sets it from its files.",
        group="Learning rate", training_only=True)
    datasets_use_prefetch: bool = setting(
        True, "Prefetch global batches at the end of the tf.data pipeline.",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("boolean", True))
    datasets_prefetch_buffer_size: Optional[int] = setting(
        None, "Batches that prefetch holds (default: tf.data's AUTOTUNE; "
        "tf_cnn_benchmarks used 1).",
        training_only=True, scaling=NOT_USED,
        tfcnn=tfcnn("integer", 1, "default AUTOTUNE in towertrain (tf_cnn_benchmarks' 1)"))
    datasets_num_private_threads: Optional[int] = setting(
        None, "Threads of a private pool for the pipeline (tf.data "
        "Options.threading.private_threadpool_size); 0 or unset: TensorFlow's "
        "shared pool.",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("integer", None))
    datasets_use_caching: bool = setting(
        False, "Cache the records (still encoded) in memory after the first epoch "
        "reads them.",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("boolean", False))
    datasets_parallel_interleave_cycle_length: Optional[int] = setting(
        None, "imagenet: TFRecord shards read at once (default: 8, or fewer "
        "shards).",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("integer", None))
    datasets_sloppy_parallel_interleave: bool = setting(
        False, "imagenet: take records from whichever shard is ready (faster with "
        "stragglers; the order, and so an exact resume, is lost).",
        training_only=True, scaling=NOT_USED, recorded=COMPARED, tfcnn=tfcnn("boolean", False))
    datasets_parallel_interleave_prefetch: Optional[int] = setting(
        None, "imagenet: shards opened ahead of the interleave (default: tf.data's "
        "AUTOTUNE).",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("integer", None))
    datasets_repeat_cached_sample: bool = setting(
        False, "Read one record, keep it in memory and repeat it for every example: "
        "measures the pipeline without file reads.",
        training_only=True, scaling=NOT_USED, recorded=COMPARED, tfcnn=tfcnn("boolean", False))

    @staticmethod
    def refuse(p, fail):
        if p.staging_depth < 0:
            fail("staging_depth", p.staging_depth, "must be >= 0 (0 turns staging off)")
        if p.data_dir is not None and not os.path.isdir(p.data_dir):
            fail("data_dir", p.data_dir,
                 "is a file, not a directory; give the directory that holds the data files"
                 if os.path.isfile(p.data_dir) else "no such directory")
        if p.data_dir is None and p.input == "queue":
            fail("input", p.input, "needs --data_dir (synthetic data is generated on the "
                 "devices)")
        value = p.datasets_num_private_threads
        if value is not None and value < 0:
            fail("datasets_num_private_threads", value, "must be >= 0")
        for flag in ("datasets_prefetch_buffer_size", "datasets_parallel_interleave_cycle_length",
                     "datasets_parallel_interleave_prefetch", "batch_group_size"):
            value = getattr(p, flag)
            if value is not None and value < 1:
                fail(flag, value, "must be >= 1")
        if p.batch_group_size > 1 and p.staging_depth == 0:
            fail("batch_group_size", p.batch_group_size, "needs staging (--staging_depth "
                 ">= 1): it is the number of batches put on each device at a time")
        if p.num_examples_per_epoch is not None:
            if p.num_examples_per_epoch < 1:
                fail("num_examples_per_epoch", p.num_examples_per_epoch, "must be >= 1")
            if p.data_dir is not None:
                fail("num_examples_per_epoch", p.num_examples_per_epoch,
                     f"conflicts with --data_dir={p.data_dir}, whose files set the epoch; "
                     "drop one")

    @staticmethod
    def refuse_given(p, explicit, fail):
        given = [flag for flag in _pipeline_flags() if flag in explicit]
        if given and (p.data_dir is None or p.input != "dataset"):
            fail(given[0], getattr(p, given[0]), "only applies to a tf.data pipeline over "
                 "files (--data_dir with --input=dataset)")
        if "batch_group_size" in explicit and p.data_dir is None:
            fail("batch_group_size", p.batch_group_size, "needs --data_dir (synthetic data is "
                 "generated on each device and never staged)")
        if "datasets_prefetch_buffer_size" in explicit and not p.datasets_use_prefetch:
            fail("datasets_prefetch_buffer_size", p.datasets_prefetch_buffer_size,
                 "conflicts with --nodatasets_use_prefetch; drop one")
        if p.data_dir is None:
            # The CLI's synthetic input lives on the devices: no tf.data, no
            # staging. (Library users may pass their own input, so
            # Params cannot check these.)
            if "input" in explicit:
                fail("input", p.input, "needs --data_dir (synthetic data is generated on "
                     "the devices)")
            if "staging_depth" in explicit and p.staging_depth > 0:
                fail("staging_depth", p.staging_depth, "needs --data_dir (synthetic data is "
                     "generated on each device and never staged)")

    def refuse_for(self, dataset):
        """Raises ParamsError naming a flag the input of `dataset` would ignore
        (the dataset is the model's default when --data_name is not given, so
        Params alone cannot tell)."""
        if self.data_dir is None:
            # Synthetic data is made at the model's input size on the devices:
            # asking it to be resized or distorted would change nothing.
            why = ("synthetic data is generated at the model's input size and never resized "
                   "or distorted; drop it, or train on files with --data_dir")
            if self.resize_method is not None:
                raise ParamsError(f"--resize_method={self.resize_method}: {why}")
            if self.distortions:
                raise ParamsError(f"--distortions: {why}")
        elif dataset == "cifar10":
            for flag in _interleave_flags():
                value = getattr(self, flag)
                if value not in (None, False):
                    raise ParamsError(f"--{flag}={value}: only applies to imagenet's TFRecord "
                                      "shards (cifar10 reads its binary files in order); "
                                      "drop it")
            if self.resize_method is not None:
                raise ParamsError(f"--resize_method={self.resize_method}: only applies to "
                                  "imagenet (cifar10 images are used as stored, 32x32); "
                                  "drop it")


def _pipeline_flags():
    """The --datasets_* settings: they tune a tf.data pipeline over files."""
    return [f.name for f in dataclasses.fields(InputSettings) if f.name.startswith("datasets_")]


def _interleave_flags():
    """The --datasets_* settings of imagenet's interleave over TFRecord shards."""
    return [name for name in _pipeline_flags() if "interleave" in name]


@dataclasses.dataclass(frozen=True)
class InputPlan(InputSettings):
    """The plan's section: what the run reads and how (data_name resolved:
    the model's dataset when not given)."""
    seed: int = dataclasses.field(kw_only=True)  # --tf_random_seed

    @property
    def synthetic(self) -> bool:
        return self.data_dir is None
