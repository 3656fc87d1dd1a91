"""Each worker process of one machine gets GPUs of its own.

TensorFlow maps every GPU a process can see (and by default takes most of
each one's memory), and --gpu_indices only picks the towers among them, so
two workers on one machine that see the same GPUs run out of memory, or meet
NCCL's refusal of two ranks on one GPU. A worker's own GPUs are set through
CUDA_VISIBLE_DEVICES before TensorFlow starts: worker k of a machine's W gets
GPUs k*G .. k*G+G-1 of the machine's list (G = --num_gpus), the way
SlurmClusterResolver numbers them, but taken from the list the machine gives
(CUDA_VISIBLE_DEVICES as Slurm or the user set it), not from 0.
towertrain.launch and --cluster_source=slurm use it.

Pure Python, no TensorFlow: the launcher imports none.
"""
import glob
import re

from towertrain.errors import DeviceError

VISIBLE = "CUDA_VISIBLE_DEVICES"
# One device node per NVIDIA GPU the driver shows (/dev/nvidiactl and
# /dev/nvidia-uvm are not GPUs).
DEVICE_NODES = "/dev/nvidia[0-9]*"


def machine_gpus(environ, device_nodes=DEVICE_NODES):
    """The GPUs this machine lets its processes use, as CUDA_VISIBLE_DEVICES
    names them: that variable's entries when it is set, else 0..N-1 for the
    N GPU device nodes the driver made."""
    listed = environ.get(VISIBLE)
    if listed is not None:
        return tuple(entry.strip() for entry in listed.split(",") if entry.strip())
    found = [node for node in glob.glob(device_nodes) if re.search(r"nvidia\d+$", node)]
    return tuple(str(i) for i in range(len(found)))


def share(local_rank, local_workers, num_gpus, gpus, where="this machine"):
    """CUDA_VISIBLE_DEVICES of the worker `local_rank` of the `local_workers`
    on one machine whose GPUs are `gpus`: its own `num_gpus` of them.
    DeviceError when they do not go round: two processes would share a GPU."""
    need = local_workers * num_gpus
    if need > len(gpus):
        shown = f" ({VISIBLE}={','.join(gpus)})" if gpus else ""
        raise DeviceError(
            f"--num_gpus={num_gpus}: {local_workers} workers on {where} need {need} GPUs "
            f"of their own, and it has {len(gpus)}{shown}; two processes on one GPU are "
            "refused (each maps all it sees: out of memory, and NCCL refuses two ranks on "
            "one GPU); lower --num_gpus or the workers per machine")
    first = local_rank * num_gpus
    return ",".join(gpus[first:first + num_gpus])
