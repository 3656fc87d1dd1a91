"""Input for the engine: synthetic, in-memory and tf.data sources, CPU slicing.

Installed as `towertrain.input_pipeline`. An input object has
`create(devices)` (eager, once) and `tower_batches(devices)` (inside the step
function), returning one (images, labels) pair per device.
"""
from .arrays import DatasetInput, from_arrays
from .slicing import split_sizes, split_to_devices
from .synthetic import SyntheticInput

__all__ = ["DatasetInput", "SyntheticInput", "from_arrays", "split_sizes",
           "split_to_devices"]
