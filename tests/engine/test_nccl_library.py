"""Whether TensorFlow can run NCCL is asked as TensorFlow loads it: a CUDA
build, and libnccl.so.2 loadable by name (LD_LIBRARY_PATH, the system's
folders) or from a folder TensorFlow's framework library names in its
RUNPATH; not whether a Python package exists. An exchange through NCCL where
it cannot load is refused in one line. The search is steered here: a fake
libnccl in a temporary folder, a loader that sees no system NCCL."""
import shutil
import subprocess

import pytest
import tensorflow as tf

from towertrain import Params, plan
from towertrain.config import machine
from towertrain.engine.process import devices, nccl_library
from towertrain.trainer import Trainer

# A real shared library standing in for NCCL: loading runs none of its code.
import _json  # noqa: E402 - a stdlib extension module: always a shared library
SHARED_LIBRARY = _json.__file__


def _no_system_nccl(name):
    """The loader on a machine without NCCL in its system folders."""
    return "/" in name and nccl_library._load(name)


@pytest.fixture
def wheel_folder(tmp_path):
    """TensorFlow's RUNPATH folder of the NCCL wheel, empty."""
    folder = tmp_path / "nvidia" / "nccl" / "lib"
    folder.mkdir(parents=True)
    return folder


def test_the_library_loads_from_tensorflow_s_folders_or_not_at_all(wheel_folder):
    folders = ["/nonexistent", str(wheel_folder)]
    assert not nccl_library.loadable(folders, load=_no_system_nccl)  # not there
    (wheel_folder / nccl_library.NCCL_LIBRARY).write_bytes(b"not a library")
    assert not nccl_library.loadable(folders, load=_no_system_nccl)  # there, unloadable
    shutil.copy(SHARED_LIBRARY, wheel_folder / nccl_library.NCCL_LIBRARY)
    assert nccl_library.loadable(folders, load=_no_system_nccl)
    tried = []
    assert nccl_library.loadable([], load=lambda name: tried.append(name) or True)
    assert tried == ["libnccl.so.2"]  # by name first, as TensorFlow's dlopen


def test_has_nccl_asks_for_a_cuda_build_and_the_library(monkeypatch, wheel_folder):
    monkeypatch.setattr(nccl_library, "tensorflow_folders", lambda: [str(wheel_folder)])
    monkeypatch.setattr(nccl_library.loadable, "__defaults__", (_no_system_nccl,))
    answers = []
    for cuda, present in [(True, False), (True, True), (False, True)]:
        monkeypatch.setattr(tf.test, "is_built_with_cuda", lambda: cuda)
        if present:
            shutil.copy(SHARED_LIBRARY, wheel_folder / nccl_library.NCCL_LIBRARY)
        nccl_library.has_nccl.cache_clear()
        answers.append(nccl_library.has_nccl())
    nccl_library.has_nccl.cache_clear()
    assert answers == [False, True, False]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs a C compiler")
def test_runpath_is_read_from_the_library_as_the_dynamic_loader_reads_it(tmp_path):
    source = tmp_path / "framework.c"
    source.write_text("int framework(void) { return 1; }\n")
    library = tmp_path / "tensorflow" / "libtensorflow_framework.so.2"
    library.parent.mkdir()
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source),
                    "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../nvidia/nccl/lib:/opt/nccl/lib"],
                   check=True)
    assert nccl_library.runpath(str(library)) == [str(tmp_path / "nvidia" / "nccl" / "lib"),
                                                  "/opt/nccl/lib"]
    bare = tmp_path / "bare.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(bare), str(source)], check=True)
    assert nccl_library.runpath(str(bare)) == []  # none named
    assert nccl_library.runpath(str(source)) == []  # not a library


MISSING = ("runs through NCCL, and TensorFlow cannot load libnccl.so.2 (not in "
           "LD_LIBRARY_PATH, the system's library folders, or TensorFlow's own: "
           "/site/nvidia/nccl/lib); install the NCCL wheel of TensorFlow's CUDA (pip install "
           "nvidia-nccl-cu12, part of tensorflow[and-cuda]), or use --all_reduce_spec=psgpu or "
           "ring (replicated), or --collective_implementation=ring with psgpu/xring or "
           "collective (collective_all_reduce)")


@pytest.mark.parametrize("flags,culprit", [
    (dict(variable_update="replicated"), "--all_reduce_spec=nccl"),  # the GPU default
    (dict(variable_update="collective_all_reduce"),
     "--all_reduce_spec=collective with NCCL collectives (--collective_implementation=auto "
     "or nccl)"),
    (dict(variable_update="collective_all_reduce", all_reduce_spec="scatter/xring"),
     "--all_reduce_spec=scatter/xring"),
    (dict(variable_update="replicated", all_reduce_spec="psgpu"), None),
    (dict(variable_update="collective_all_reduce", collective_implementation="ring"), None),
    (dict(variable_update="collective_all_reduce", all_reduce_spec="psgpu/xring"), None),
])
def test_an_exchange_through_nccl_without_the_library_is_refused(monkeypatch, flags, culprit):
    monkeypatch.setattr(nccl_library, "has_nccl", lambda: False)
    monkeypatch.setattr(nccl_library, "tensorflow_folders", lambda: ["/site/nvidia/nccl/lib"])
    layout = plan.lay_out(Params(model="trivial", device="gpu", num_gpus=2, **flags),
                          machine=machine.Machine(gpus=2))
    assert devices.nccl_culprit(layout.topology, layout.exchange) == culprit
    if culprit is None:
        Trainer._check_devices(layout)
        return
    with pytest.raises(devices.DeviceError) as raised:
        Trainer._check_devices(layout)
    assert str(raised.value) == f"{culprit}: {MISSING}"
    monkeypatch.setattr(nccl_library, "has_nccl", lambda: True)
    Trainer._check_devices(layout)
