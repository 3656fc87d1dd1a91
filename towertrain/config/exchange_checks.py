"""Checks of the gradient-exchange flags (--all_reduce_spec,
--gradient_repacking, --gradient_pack_mb), kept apart from params.py so each file stays small.
Every message starts with the flag at fault and names the flag it clashes with."""

# --all_reduce_spec values by the --variable_update that takes them.
REPLICATED_SPECS = ("nccl", "pscpu", "psgpu", "ring")
# scatter/xring: Horovod's hierarchy (reduce-scatter in the worker, each
# device's shard across workers, all-gather); CPU and GPU alike.
COLLECTIVE_SPECS = ("pscpu/xring", "psgpu/xring", "nccl/xring", "scatter/xring", "collective")
MAX_PACKS = 1000  # per dtype; collective instance keys are numbered by pack
_GPU_ONLY = ("nccl", "psgpu")  # the local part of a spec that sums on GPUs
# --device=gpu's packs when neither --gradient_repacking nor --gradient_pack_mb
# is given: PyTorch DDP's bucket size, so the exchange overlaps the backward
# pass by default. CPU devices keep one pack per dtype (tf_cnn_benchmarks'
# default): nothing measured here shows overlap paying on 2 shared cores.
DEFAULT_GPU_PACK_MB = 25.0
_EXCHANGING = ("replicated", "collective_all_reduce")
_XLA_WHY = ("a compiled tower hands out all its gradients at once, so no pack could "
            "start before the whole backward pass ends; drop one")


def gradient_pack_bytes(p, device):
    """The bytes per pack a run cuts its gradients into, or None (counted
    packs, or one pack per dtype)."""
    if p.gradient_pack_mb is not None:
        return max(1, round(p.gradient_pack_mb * 10**6)) if p.gradient_pack_mb else None
    if (device == "gpu" and p.variable_update in _EXCHANGING and not p.gradient_repacking
            and not p.xla_compile):
        return int(DEFAULT_GPU_PACK_MB * 10**6)
    return None


def default_spec(variable_update, device):
    """The exchange a mode uses when --all_reduce_spec is not given. For
    collective_all_reduce on CPU devices pscpu/xring (bench/bench_exchange.py
    (b) measured it faster than the flat one at 2 workers x 2 devices); on
    GPUs the flat collective, as MultiWorkerMirroredStrategy: NCCL's own
    all-reduce already crosses machines over several channels (one NIC each)
    and uses trees for small packs, it needs one NCCL communicator per GPU
    where scatter/xring needs two, and it meets none of the hierarchy's
    first-step ordering hazards (docs/exchange.md's cost model)."""
    if variable_update == "replicated":
        return "nccl" if device == "gpu" else "pscpu"
    if variable_update == "collective_all_reduce":
        return "collective" if device == "gpu" else "pscpu/xring"
    return None


def split_spec(spec):
    """(local algorithm, cross-worker algorithm) of a collective spec:
    ('pscpu', 'xring') for 'pscpu/xring', (None, 'collective') for the flat one."""
    local, _, cross = spec.rpartition("/")
    return (local or None), cross


def collective_implementation(requested, device):
    """'nccl' or 'ring': how a collective_all_reduce run's collectives over
    GPUs run (auto: NCCL on GPU devices). Collectives on CPU devices (the
    step's scalars, a pscpu member) always run TensorFlow's ring."""
    return "nccl" if device == "gpu" and requested != "ring" else "ring"


def validate_implementation(p, device, spec, fail):
    """--collective_implementation=nccl where NCCL cannot run is refused."""
    if p.collective_implementation != "nccl":
        return
    if device != "gpu":
        fail("collective_implementation", "nccl", "needs --device=gpu (NCCL runs between "
             "GPUs); on CPU devices use ring or auto")
    if spec is not None and split_spec(spec)[0] == "pscpu":
        fail("collective_implementation", "nccl", f"needs a GPU to cross workers, and "
             f"--all_reduce_spec={spec} crosses from /cpu:0; use nccl/xring, psgpu/xring, "
             "scatter/xring or collective")


def _validate_pack_size(p, fail):
    pack_mb = p.gradient_pack_mb
    if pack_mb is not None and not 0 <= pack_mb < float("inf"):
        fail("gradient_pack_mb", pack_mb, "must be a number >= 0 (0: one pack per dtype)")
    if pack_mb is not None and p.gradient_repacking:
        fail("gradient_pack_mb", pack_mb, f"conflicts with --gradient_repacking="
             f"{p.gradient_repacking}: packs are sized in bytes or counted, not both; "
             "drop one")
    if p.xla_compile and p.gradient_repacking:
        fail("gradient_repacking", p.gradient_repacking, "conflicts with --xla_compile: "
             + _XLA_WHY)
    if p.xla_compile and pack_mb:
        fail("gradient_pack_mb", pack_mb, "conflicts with --xla_compile: " + _XLA_WHY)


def validate_exchange(p, device, fail):
    mode, spec, packs = p.variable_update, p.all_reduce_spec, p.gradient_repacking
    if not 0 <= packs <= MAX_PACKS:
        fail("gradient_repacking", packs, f"must be in 0..{MAX_PACKS} (0: one pack per dtype)")
    _validate_pack_size(p, fail)
    if mode == "collective_all_reduce":
        validate_implementation(p, device, spec or default_spec(mode, device), fail)
    if spec is None:
        return
    if mode == "replicated" and spec in COLLECTIVE_SPECS:
        fail("all_reduce_spec", spec, "is a --variable_update=collective_all_reduce "
             f"exchange; with --variable_update=replicated use {', '.join(REPLICATED_SPECS)}")
    if mode == "collective_all_reduce" and spec in REPLICATED_SPECS:
        fail("all_reduce_spec", spec, "is a --variable_update=replicated algorithm; with "
             f"--variable_update=collective_all_reduce use {', '.join(COLLECTIVE_SPECS)}")
    # Other modes: refused by the settings table's applies_with (mode_checks).
    local = split_spec(spec)[0] if "/" in spec else spec
    if local in _GPU_ONLY and device == "cpu":
        fail("all_reduce_spec", spec, "needs --device=gpu; on CPU devices use "
             + ("pscpu or ring" if mode == "replicated"
               else "pscpu/xring, scatter/xring or collective"))
