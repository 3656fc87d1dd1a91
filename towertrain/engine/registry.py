"""Name -> class registries behind the flags that pick an implementation."""


class Registry:
    """Classes selectable by name, e.g. for --variable_update or --all_reduce_spec.

    Adding an implementation is one decorated class; nothing else is edited.
    """

    def __init__(self, kind):
        self.kind = kind  # what an error calls the choice, e.g. "all-reduce"
        self._classes = {}

    def register(self, name):
        """Class decorator: makes `name` select the class (sets cls.name)."""
        def decorate(cls):
            cls.name = name
            self._classes[name] = cls
            return cls
        return decorate

    def get(self, name):
        try:
            return self._classes[name]
        except KeyError:
            raise ValueError(f"unknown {self.kind} {name!r}; known: "
                             f"{', '.join(self.names())}") from None

    def names(self):
        return sorted(self._classes)
