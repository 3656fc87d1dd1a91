"""--num_gpus=N on a machine with one GPU: the GPU is split into N logical
GPUs (tf.config.set_logical_device_configuration, an equal share of its
memory each), as --device=cpu splits the host, and the header says so. An
exchange through NCCL across them is refused before anything is built: NCCL
refuses two ranks on one GPU; without --all_reduce_spec the run takes psgpu
(psgpu/xring) instead of the NCCL default, and the header says why. The one
GPU is a stand-in (no GPU needed): TensorFlow's device configuration calls
are recorded."""
import dataclasses
import types

import pytest
import tensorflow as tf

from towertrain import Params, callbacks, plan
from towertrain.config import machine
from towertrain.engine.process import devices
from towertrain.trainer import Trainer

GPU = tf.config.PhysicalDevice(name="/physical_device:GPU:0", device_type="GPU")


@pytest.fixture
def one_gpu(monkeypatch):
    """One physical GPU of 81559 MB (an H100's); returns the configurations set."""
    configured = {}
    monkeypatch.setattr(machine, "physical_gpus", lambda: (GPU,))
    monkeypatch.setattr(devices, "gpu_memory_mb", lambda: 81559)
    monkeypatch.setattr(tf.config, "get_logical_device_configuration",
                        lambda device: configured.get(device.name))
    monkeypatch.setattr(tf.config, "set_logical_device_configuration",
                        lambda device, logical: configured.__setitem__(device.name, logical))
    return configured


def test_four_towers_on_one_gpu_are_four_logical_gpus(one_gpu):
    assert devices.tower_devices("gpu", 4) == ["/gpu:0", "/gpu:1", "/gpu:2", "/gpu:3"]
    limits = [c.memory_limit for c in one_gpu[GPU.name]]
    assert limits == [18350] * 4  # 0.9 x 81559 MB / 4
    assert devices.logical_gpus_per_gpu() == 4
    topology = plan.lay_out(Params(model="trivial", device="gpu", num_gpus=4,
                                   all_reduce_spec="psgpu", variable_update="replicated"),
                            machine=machine.Machine(gpus=1)).topology
    assert devices.describe_split(topology) == (
        " (logical GPUs: GPU 0 split into 4, 18350 MB each; no NCCL between them)")
    # Already split (the proof splits it first): kept; one tower: the GPU whole.
    assert devices.tower_devices("gpu", 2) == ["/gpu:0", "/gpu:1"]
    assert limits == [c.memory_limit for c in one_gpu[GPU.name]]


def test_one_tower_leaves_the_gpu_whole(one_gpu):
    assert devices.tower_devices("gpu", 1) == ["/gpu:0"] and not one_gpu
    assert devices.logical_gpus_per_gpu() == 1


def _layout(**flags):
    return plan.lay_out(Params(model="trivial", device="gpu", num_gpus=4, **flags),
                        machine=machine.Machine(gpus=1))


NCCL_REFUSED = ("the 4 towers are logical GPUs of one GPU (split into 4), and NCCL refuses "
                "two ranks on one GPU; use --all_reduce_spec=psgpu or ring (replicated), or "
                "psgpu/xring or collective with --collective_implementation=ring "
                "(collective_all_reduce)")


@pytest.mark.parametrize("flags,culprit", [
    (dict(variable_update="replicated", all_reduce_spec="nccl"), "--all_reduce_spec=nccl"),
    (dict(variable_update="collective_all_reduce", all_reduce_spec="nccl/xring"),
     "--all_reduce_spec=nccl/xring"),
    (dict(variable_update="collective_all_reduce", all_reduce_spec="scatter/xring"),
     "--all_reduce_spec=scatter/xring"),
    (dict(variable_update="collective_all_reduce", all_reduce_spec="collective"),
     "--all_reduce_spec=collective with NCCL collectives (--collective_implementation=auto "
     "or nccl)"),
    (dict(variable_update="collective_all_reduce", all_reduce_spec="collective",
          collective_implementation="nccl"),
     "--all_reduce_spec=collective with NCCL collectives (--collective_implementation=auto "
     "or nccl)"),
])
def test_nccl_across_logical_gpus_is_refused_before_anything_is_built(one_gpu, flags, culprit):
    devices.split_gpu(4)
    with pytest.raises(devices.DeviceError) as raised:
        Trainer._check_devices(_layout(**flags))
    assert str(raised.value) == f"{culprit}: {NCCL_REFUSED}"


@pytest.mark.parametrize("flags", [
    dict(variable_update="replicated", all_reduce_spec="psgpu"),
    dict(variable_update="replicated", all_reduce_spec="ring"),
    dict(variable_update="parameter_server", local_parameter_device="gpu"),
    dict(variable_update="collective_all_reduce", all_reduce_spec="collective",
         collective_implementation="ring"),
    dict(variable_update="collective_all_reduce", all_reduce_spec="psgpu/xring",
         collective_implementation="ring"),
])
def test_exchanges_without_nccl_run_on_logical_gpus(one_gpu, flags):
    devices.split_gpu(4)
    devices.check_split_gpu_exchange(_layout(**flags).topology, _layout(**flags).exchange)


def test_the_header_says_the_towers_are_logical_gpus(one_gpu):
    # The graph for the 4 logical GPUs, traced here (no GPU): the header's
    # Devices line as the run on one GPU prints it.
    devices.split_gpu(4)
    trainer = Trainer(Params(model="trivial", device="gpu", num_gpus=4, batch_size=2,
                             variable_update="replicated", all_reduce_spec="psgpu"),
                      check_devices=False)
    try:
        info = dict(trainer.header_info())
    finally:
        trainer.close()
    assert info["Devices"] == ("['/gpu:0', '/gpu:1', '/gpu:2', '/gpu:3'] (logical GPUs: GPU 0 "
                               "split into 4, 18350 MB each; no NCCL between them)")


SPLIT_NOTE = "the 4 towers are logical GPUs of one GPU, and NCCL refuses two ranks on one GPU"


@pytest.mark.parametrize("flags,spec,usual", [
    (dict(variable_update="replicated"), "psgpu", "nccl"),
    (dict(variable_update="collective_all_reduce"), "psgpu/xring", "collective"),
])
def test_the_default_spec_on_one_split_gpu_is_psgpu_and_the_header_says_why(
        one_gpu, tmp_path, flags, spec, usual):
    params = Params(model="trivial", device="gpu", num_gpus=4, batch_size=2,
                    benchmark_log_dir=str(tmp_path), **flags)
    assert params.resolved_all_reduce_spec == spec  # Params' checks see what the run takes
    devices.split_gpu(4)
    trainer = Trainer(params, check_devices=False)
    try:
        devices.check_split_gpu_exchange(trainer.plan.topology, trainer.plan.exchange)
        assert trainer.plan.exchange.all_reduce_spec == spec
        assert dict(trainer.header_info())["AllReduce"] == f"{spec} (not {usual}: {SPLIT_NOTE})"
        # The benchmark log records the spec the run took, where it records the settings.
        handles = types.SimpleNamespace(settings=dataclasses.asdict(params), trace_step=None)
        logs = [c for c in callbacks._observers(trainer.plan, handles, None, print)
                if isinstance(c, callbacks.BenchmarkLogFile)]
        assert logs[0].parameters["all_reduce_spec"] == spec
    finally:
        trainer.close()
    # Given, a spec is kept (and NCCL refused, above); a whole GPU keeps NCCL.
    given = Params(model="trivial", device="gpu", num_gpus=4, all_reduce_spec="ring",
                   variable_update="replicated")
    assert plan.lay_out(given, machine=machine.Machine(gpus=1)).exchange.spec_note is None
    whole = plan.lay_out(params, machine=machine.Machine(gpus=4)).exchange
    assert (whole.all_reduce_spec, whole.spec_note) == (usual, None)


def test_the_flat_collective_over_tensorflow_s_ring_stays_the_default(one_gpu):
    exchange = _layout(variable_update="collective_all_reduce",
                       collective_implementation="ring").exchange
    assert (exchange.all_reduce_spec, exchange.spec_note) == ("collective", None)
