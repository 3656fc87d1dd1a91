"""parameter_server with --local_parameter_device=gpu: where each variable and
optimizer slot REALLY lives (the variable's own .device), not the manager's
placement list. Four logical CPUs stand in for four GPUs (the trainer's device
list is patched), soft placement is off, so a variable lives exactly where it
was created and a misplaced one cannot be moved back silently."""
import math

import numpy as np
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.engine.process import devices as devices_lib
from helpers.gpu_graph import ps_input, ps_model

STAND_INS = ["/cpu:0", "/cpu:1", "/cpu:2", "/cpu:3"]


def greedy(sizes, num_devices):
    """docs: largest variable first onto the least-loaded device."""
    load, out = [0] * num_devices, [None] * len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        target = min(range(num_devices), key=lambda d: load[d])
        out[i], load[target] = target, load[target] + sizes[i]
    return out


def lives_on(variable):
    spec = tf.DeviceSpec.from_string(variable.value.device)
    return spec.device_type.upper(), spec.device_index


def test_parameter_server_gpu_variables_and_slots_live_spread(monkeypatch):
    monkeypatch.setattr(devices_lib, "tower_devices", lambda device, count, check=True, indices=None:
                        STAND_INS[:count])
    monkeypatch.setattr(devices_lib, "check_data_format", lambda device, fmt: None)
    before = tf.config.get_soft_device_placement()
    tf.config.set_soft_device_placement(False)
    try:
        params = Params(device="gpu", num_gpus=4, data_format="NHWC",
                        variable_update="parameter_server", local_parameter_device="gpu",
                        optimizer="momentum")
        trainer = Trainer(params, model=ps_model(), input_source=ps_input())
        trainable, non_trainable = trainer.variables.primary_variables()
        expected = greedy([math.prod(v.shape) for v in trainable], 4)
        assert sorted(set(expected)) == [0, 1, 2, 3]
        for variable, device in zip(trainable, expected):
            assert lives_on(variable) == ("CPU", device), (variable.path,
                                                           variable.value.device, device)
        # Each momentum slot lives with its variable: the same multiset of devices.
        slot_homes = [lives_on(v) for opt in trainer.variables.optimizers()
                      for v in opt.variables if v.path.endswith("_momentum")]
        assert sorted(slot_homes) == sorted(("CPU", d) for d in expected), slot_homes
        for variable in non_trainable:  # (this model has none; kept for BN models)
            assert lives_on(variable) == ("CPU", 0), variable.path
        assert np.isfinite(trainer.step().loss)
    finally:
        tf.config.set_soft_device_placement(before)
