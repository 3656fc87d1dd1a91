"""Whether TensorFlow can load NCCL, asked the way TensorFlow loads it.

TensorFlow's CUDA build does not link NCCL: its NCCL kernels and collectives
call a stub that opens libnccl.so.2 with dlopen the first time a communicator
is made (xla/tsl/cuda/nccl_stub.cc, DsoLoader::GetNcclDsoHandle: "nccl" and
TF_NCCL_VERSION 2). dlopen looks in LD_LIBRARY_PATH, in the RUNPATH of the
library that calls it (TensorFlow's framework library; the CUDA wheel's names
the nvidia-* wheels' lib folders, relative to $ORIGIN) and in the system's
library folders. A Python package named nvidia.nccl says nothing of that: it
may be there for another CUDA, and a system libnccl may be there without it.
Without the library a GPU exchange through NCCL fails at its first step, so
the run is refused up front (towertrain.engine.process.devices.check_nccl).
"""
import ctypes
import functools
import os
import struct

NCCL_LIBRARY = "libnccl.so.2"
_FRAMEWORK_LIBRARY = "libtensorflow_framework.so.2"

# ELF: 64-bit little-endian files (x86-64, aarch64) are what TensorFlow ships.
_ELF_MAGIC, _ELFCLASS64, _ELFDATA2LSB = b"\x7fELF", 2, 1
_SHT_DYNAMIC, _DT_NULL, _DT_RPATH, _DT_RUNPATH = 6, 0, 15, 29


def runpath(library):
    """The folders the RUNPATH (or older RPATH) of the ELF shared library
    `library` names, $ORIGIN expanded; [] when it has none or is not a
    64-bit little-endian ELF file."""
    try:
        with open(library, "rb") as f:
            data = f.read()
    except OSError:
        return []
    if data[:4] != _ELF_MAGIC or data[4] != _ELFCLASS64 or data[5] != _ELFDATA2LSB:
        return []
    try:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                    for i in range(shnum)]
        paths = []
        for section in sections:
            if section[1] != _SHT_DYNAMIC:
                continue
            strings_at = sections[section[6]][4]  # sh_link: the string table
            for at in range(section[4], section[4] + section[5], 16):
                tag, value = struct.unpack_from("<qQ", data, at)
                if tag == _DT_NULL:
                    break
                if tag in (_DT_RPATH, _DT_RUNPATH):
                    end = data.index(b"\0", strings_at + value)
                    paths.append(data[strings_at + value:end].decode())
    except (struct.error, IndexError, ValueError):
        return []
    origin = os.path.dirname(os.path.abspath(library))
    return [os.path.normpath(folder.replace("$ORIGIN", origin).replace("${ORIGIN}", origin))
            for path in paths for folder in path.split(":") if folder]


def tensorflow_folders():
    """The folders TensorFlow's own dlopen searches besides the system's:
    its framework library's RUNPATH."""
    import tensorflow as tf  # deferred: asked only on GPU runs that need NCCL
    return runpath(os.path.join(tf.sysconfig.get_lib(), _FRAMEWORK_LIBRARY))


def _load(name):
    try:
        ctypes.CDLL(name, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        return True
    except OSError:
        return False


def loadable(folders, load=_load) -> bool:
    """Whether NCCL_LIBRARY loads as TensorFlow's dlopen would find it: by
    its name (LD_LIBRARY_PATH, the system's cache and folders), else from one
    of `folders` (TensorFlow's RUNPATH)."""
    if load(NCCL_LIBRARY):
        return True
    return any(load(os.path.join(folder, NCCL_LIBRARY)) for folder in folders
               if os.path.exists(os.path.join(folder, NCCL_LIBRARY)))


@functools.lru_cache(maxsize=None)
def has_nccl() -> bool:
    """Whether this TensorFlow can run NCCL: a CUDA build that can load
    libnccl.so.2 (read once per process)."""
    import tensorflow as tf
    return tf.test.is_built_with_cuda() and loadable(tensorflow_folders())


def missing_message(culprit) -> str:
    """The refusal of an exchange through NCCL (`culprit`: the setting that
    asks for it) where TensorFlow cannot load it."""
    where = ", ".join(tensorflow_folders()) or "none named by TensorFlow's library"
    return (f"{culprit}: runs through NCCL, and TensorFlow cannot load {NCCL_LIBRARY} (not in "
            f"LD_LIBRARY_PATH, the system's library folders, or TensorFlow's own: {where}); "
            "install the NCCL wheel of TensorFlow's CUDA (pip install nvidia-nccl-cu12, part "
            "of tensorflow[and-cuda]), or use --all_reduce_spec=psgpu or ring (replicated), "
            "or --collective_implementation=ring with psgpu/xring or collective "
            "(collective_all_reduce)")
