"""Input for the engine: synthetic, in-memory, generator, file and queue sources.

Installed as `towertrain.input_pipeline`. An input object has
`create(devices)` (eager, once) and `tower_batches(devices)` (inside the step
function), returning one (images, labels) pair per device; the global batch is
assembled and sliced on the CPU. Finite inputs also have `num_examples` and
`steps_per_epoch` (for --num_epochs). Library entry points: `from_arrays`,
`from_dataset`, `from_generator` (also `towertrain.from_...`). File readers: `cifar10`, `imagenet`;
`queue_input` for Python sources fed by threads.
"""
from .arrays import DatasetInput, InputError, from_arrays, from_dataset, from_generator
from .queue_input import QueueInput
from .slicing import split_sizes, split_to_devices
from .synthetic import SyntheticInput

__all__ = ["DatasetInput", "InputError", "QueueInput", "SyntheticInput", "from_arrays",
           "from_dataset", "from_generator", "split_sizes", "split_to_devices"]
