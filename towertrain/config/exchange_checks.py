"""Checks of the gradient-exchange flags (--all_reduce_spec,
--gradient_repacking), kept apart from params.py so each file stays small.
Every message starts with the flag at fault and names the flag it clashes with."""

# --all_reduce_spec values by the --variable_update that takes them.
REPLICATED_SPECS = ("nccl", "pscpu", "psgpu", "ring")
COLLECTIVE_SPECS = ("pscpu/xring", "psgpu/xring", "nccl/xring", "collective")
MAX_PACKS = 1000  # per dtype; collective instance keys are numbered by pack
_GPU_ONLY = ("nccl", "psgpu")  # the local part of a spec that sums on GPUs


def default_spec(variable_update, device):
    """The exchange a mode uses when --all_reduce_spec is not given. For
    collective_all_reduce the hierarchical one: bench/bench_exchange.py (b)
    measured it faster than the flat one at 2 workers x 2 devices."""
    if variable_update == "replicated":
        return "nccl" if device == "gpu" else "pscpu"
    if variable_update == "collective_all_reduce":
        return "nccl/xring" if device == "gpu" else "pscpu/xring"
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
             f"--all_reduce_spec={spec} crosses from /cpu:0; use nccl/xring, psgpu/xring "
             "or collective")


def validate_exchange(p, device, fail):
    mode, spec, packs = p.variable_update, p.all_reduce_spec, p.gradient_repacking
    if not 0 <= packs <= MAX_PACKS:
        fail("gradient_repacking", packs, f"must be in 0..{MAX_PACKS} (0: one pack per dtype)")
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
             + ("pscpu or ring" if mode == "replicated" else "pscpu/xring or collective"))
