"""The launcher reads each worker's towers from the worker flags' text, before
any Params exists, through the section that declares --num_gpus
(towertrain.engine.process.settings.Devices): the value given, the declared
default when absent, and 0 when unreadable (no GPU shared out: each worker
refuses the value itself, naming it)."""
import pytest

from towertrain.commands import launch

GPUS = {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}


@pytest.mark.parametrize("flags,shares", [
    ([], ["0", "1"]),  # --num_gpus's default, 1
    (["--num_gpus=2"], ["0,1", "2,3"]),
    (["--num_gpus", "2"], ["0,1", "2,3"]),
    (["--num_gpus=two"], [None, None]),
])
def test_each_worker_gets_the_towers_its_flags_ask_for(flags, shares):
    assert launch.gpu_shares(2, flags, GPUS) == shares
