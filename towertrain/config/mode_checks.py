"""Flags that only one mode reads, from the settings table (`Setting.applies_with`):
given with another mode, each is an error naming the flag and the mode, e.g.
`--all_reduce_spec=ring: only applies to --variable_update=replicated (got
--variable_update=parameter_server)`.

One generic check for both entry points: Params (library users) sees a value that
differs from the default; the command line also sees a flag given explicitly
with its default value (`explicit`, the names absl marks present).
"""
from towertrain.config import settings


def requirement(mode, allowed, actual):
    """What the flag needs, and what the run has instead."""
    if allowed == (True,):  # a boolean mode
        return f"only applies with --{mode}"
    values = " or ".join(f"--{mode}={value}" for value in allowed)
    if actual is None:
        return f"only applies with {values}"
    return f"only applies to {values} (got --{mode}={actual})"


def check(p, fail, explicit=None):
    """fail(flag, value, message) for the first setting given (in `explicit`,
    or set to a non-default value when `explicit` is None) whose mode `p` lacks."""
    for setting in settings.mode_dependent():
        mode, allowed = setting.applies_with
        actual = getattr(p, mode)
        if actual in allowed:
            continue
        value = getattr(p, setting.name)
        given = (setting.name in explicit if explicit is not None
                 else value != setting.default)
        if given:
            fail(setting.name, value, requirement(mode, allowed, actual))
