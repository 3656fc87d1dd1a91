"""TOWERTRAIN_FULL_SWEEP=1: also run the copies of a tested code path (deeper
models of one builder, the rest of an equivalence grid). The default suite
keeps one representative of each, and says which in the skip reason."""
import os

import pytest

FULL_SWEEP = os.environ.get("TOWERTRAIN_FULL_SWEEP") == "1"


def full_sweep_only(reason):
    """A mark that skips unless TOWERTRAIN_FULL_SWEEP=1, saying why the default
    suite may (`reason`)."""
    return pytest.mark.skipif(not FULL_SWEEP,
                              reason=f"{reason}; TOWERTRAIN_FULL_SWEEP=1 runs it")
