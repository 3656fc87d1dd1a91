"""The all-reduce interface: sum per-device gradient lists, result on every device."""
import abc

from towertrain.engine.registry import Registry

_ALGORITHMS = Registry("all-reduce")
register = _ALGORITHMS.register
registered_names = _ALGORITHMS.names


def create(name):
    return _ALGORITHMS.get(name)()


class AllReduce(abc.ABC):
    name = None
    transfer_dtypes = None  # the dtypes it can move; None: any

    @abc.abstractmethod
    def reduce(self, per_device, devices):
        """Sums across devices.

        per_device[d][v] is device d's tensor for variable v, placed on
        devices[d]. Returns the same structure holding the sums, each on its
        device and bit-identical across devices.
        """
