"""The all-reduce interface: sum per-device gradient lists, result on every device."""
import abc

_ALGORITHMS = {}


def register(name):
    """Class decorator: makes `--all_reduce_spec=name` select the class."""
    def decorate(cls):
        cls.name = name
        _ALGORITHMS[name] = cls
        return cls
    return decorate


def create(name):
    try:
        return _ALGORITHMS[name]()
    except KeyError:
        raise ValueError(f"unknown all-reduce {name!r}; known: "
                         f"{', '.join(sorted(_ALGORITHMS))}") from None


def registered_names():
    return sorted(_ALGORITHMS)


class AllReduce(abc.ABC):
    name = None

    @abc.abstractmethod
    def reduce(self, per_device, devices):
        """Sums across devices.

        per_device[d][v] is device d's tensor for variable v, placed on
        devices[d]. Returns the same structure holding the sums, each on its
        device and bit-identical across devices.
        """
