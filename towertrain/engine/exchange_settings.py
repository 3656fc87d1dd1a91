"""The gradient exchange's settings, declared beside the code that reads them
(towertrain.engine.exchange and towertrain.engine.variable_mgr, whose
packages import TensorFlow, so the declaration sits beside them), with their
refusals; the plan's Exchange section and how it is worked out.
Every message starts with the flag at fault and names the flag it clashes with."""
import dataclasses
from typing import Optional

from towertrain.config.declare import (
    ALWAYS, COMPARED, NOT_USED, PER_CONFIGURATION, WHEN_APPLIES, section, setting, tfcnn)

VARIABLE_UPDATES = ("parameter_server", "replicated", "independent", "collective_all_reduce")
# replicated takes the first four; collective_all_reduce the rest: tf_cnn_benchmarks'
# local/cross grammar (sum on the worker, then one exchange per worker) or flat.
ALL_REDUCE_SPECS = ("nccl", "pscpu", "psgpu", "ring",
                    "pscpu/xring", "psgpu/xring", "nccl/xring", "scatter/xring", "collective")
VARIABLE_CONSISTENCIES = ("strong", "relaxed")
COMPACT_DTYPES = ("float16", "bfloat16")
AUTO_PACKS = "auto"  # --gradient_pack_mb=auto: the pack size measured in the warm-up
# The modes that exchange gradients (--all_reduce_spec, --gradient_repacking).
EXCHANGES = ("variable_update", ("replicated", "collective_all_reduce"))
_ACROSS_PROCESSES = ("use --variable_update=collective_all_reduce across worker processes "
                     "(--worker_hosts and --task_index, or python -m towertrain.launch "
                     "--num_workers=N to start them on one machine)")
# tf_cnn_benchmarks' --variable_update values that towertrain refuses, and why.
_TFCNN_REFUSED_MODES = (
    ("distributed_replicated", "a TF 1 mode with parameter-server tasks, which towertrain "
     "does not have; " + _ACROSS_PROCESSES),
    ("distributed_all_reduce", "a TF 1 mode driven by a controller task, which towertrain "
     "does not have; " + _ACROSS_PROCESSES),
    ("horovod", "Horovod does not install on TF >= 2.16, so towertrain has no horovod mode; "
     + _ACROSS_PROCESSES))


@section("Devices and variables")
class ExchangeSettings:
    variable_update: str = setting(
        "parameter_server", "How towers share variables.",
        choices=VARIABLE_UPDATES, scaling=PER_CONFIGURATION,
        tfcnn=tfcnn("enum", "parameter_server", "distributed_replicated, distributed_all_reduce "
                    "and horovod are not values: use collective_all_reduce",
                    values=("parameter_server", "replicated", "distributed_replicated",
                            "independent", "distributed_all_reduce", "collective_all_reduce",
                            "horovod"),
                    refused_values=_TFCNN_REFUSED_MODES))
    all_reduce_spec: Optional[str] = setting(
        None, "The gradient exchange. replicated: nccl, pscpu, psgpu or ring "
        "(default: nccl on gpu, pscpu on cpu). collective_all_reduce: "
        "local/xring sums on each worker (pscpu on cpu, nccl or psgpu on "
        "gpu), then one cross-worker collective per pack from one member per "
        "worker; scatter/xring reduce-scatters each pack over the worker's "
        "devices, each device sums its shard across workers (all L devices' "
        "links at once), then all-gathers (Horovod's hierarchy; NCCL on gpu); "
        "collective sums over every device of every worker flatly (default: "
        "pscpu/xring on cpu, collective on gpu).",
        choices=ALL_REDUCE_SPECS, scaling=PER_CONFIGURATION,
        applies_with=EXCHANGES,
        tfcnn=tfcnn("string", None, "nccl, pscpu, psgpu, ring"))
    gradient_repacking: int = setting(
        0, "Cut each dtype's gradients into this many packs of about equal "
        "bytes, in reverse layer order, each reduced on its own so its "
        "exchange can start while the backward pass still runs (0: one pack "
        "per dtype). replicated and collective_all_reduce.",
        training_only=True, scaling=NOT_USED,
        applies_with=EXCHANGES,
        tfcnn=tfcnn("integer", 0))
    gradient_pack_mb: Optional[float] = setting(
        None, "Cut each dtype's gradients into packs of at most this many MB (10**6 "
        "bytes; PyTorch DDP's buckets are 25 MB, Horovod's fusion buffer 64 "
        "MB), about equal, in reverse layer order, each reduced as soon as "
        "its gradients exist (0: one pack per dtype; at most 1000 packs per "
        "dtype). auto: times a few candidate sizes (one pack per dtype, 64, "
        "16, 4, 1 MB: those that cut this model differently) in the warm-up "
        "steps, largest packs first while each is more than 3% faster than "
        "the one before, and trains on with the last that was, the same pick "
        "on every worker; the header and the run record say it, a resume keeps it. "
        "Default: 25 on --device=gpu, one pack per dtype on cpu. Not "
        "with --gradient_repacking (packs are counted or sized, not both) nor "
        "--xla_compile. replicated and collective_all_reduce.",
        training_only=True, scaling=NOT_USED, words=(AUTO_PACKS,),
        applies_with=EXCHANGES)
    variable_consistency: str = setting(
        "strong", "replicated only: strong applies each step's all-reduced gradients in "
        "that step; relaxed applies them one step later, so the exchange "
        "overlaps the next step's compute (the variables lag one step).",
        choices=VARIABLE_CONSISTENCIES, training_only=True, scaling=NOT_USED,
        applies_with=("variable_update", ("replicated",)), recorded=COMPARED,
        tfcnn=tfcnn("enum", "strong", values=("strong", "relaxed")))
    compact_gradient_transfer: bool = setting(
        False, "All-reduce gradients in half precision (--compact_transfer_dtype: "
        "float16, or bfloat16 with --use_bf16), within the process and across "
        "workers: cast before the sum, summed in that dtype, cast back.",
        group="Precision and speed", training_only=True,
        applies_with=("variable_update", ("replicated", "collective_all_reduce")),
        tfcnn=tfcnn("boolean", True, "default off in towertrain"),
        # The precision every update's gradient sum was rounded to: a resume
        # that changes it is refused, as a change of --use_fp16 is.
        recorded=ALWAYS)
    compact_transfer_dtype: Optional[str] = setting(
        None, "The dtype --compact_gradient_transfer sends: float16 (11 significant "
        "bits, overflows above 65504: such a step is skipped on every device "
        "alike) or bfloat16 (float32's range, 8 significant bits). Default: "
        "bfloat16 with --use_bf16, else float16.",
        choices=COMPACT_DTYPES, group="Precision and speed", training_only=True,
        applies_with=("compact_gradient_transfer", (True,)), recorded=WHEN_APPLIES)
    sync_batch_norm: bool = setting(
        False, "Batch-norm statistics over the whole global batch instead of each "
        "tower's slice.",
        group="Precision and speed", training_only=True, recorded=COMPARED)

    def spec_on(self, device, split_gpu=False, requested_implementation="auto"):
        """The exchange the run takes: --all_reduce_spec, else its mode's
        default on `device` (default_spec; None for modes without one)."""
        return self.all_reduce_spec or default_spec(
            self.variable_update, device, split_gpu, requested_implementation)

    @staticmethod
    def refuse(p, fail):
        # The exchange against the devices and the mode: validate_exchange, run
        # last by towertrain.config.params (after the modes' own checks).
        if p.sync_batch_norm:
            # Refused rather than ignored: a run must not claim global statistics
            # it does not compute.
            if p.variable_update == "independent":
                fail("sync_batch_norm", True, "needs one model trained by every tower "
                     "(--variable_update=replicated or parameter_server); independent towers "
                     "train separate models")
            if p.xla_compile:
                fail("sync_batch_norm", True, "conflicts with --xla_compile: each tower is "
                     "compiled on its own device, and the statistics cross towers; drop one")
        if p.compact_gradient_transfer and compact_dtype(p, p.use_bf16 and "bfloat16") == (
                "bfloat16") and p.resolved_all_reduce_spec == "nccl":
            fail("compact_gradient_transfer", True, "sends bfloat16, which NCCL cannot "
                 "carry; use --all_reduce_spec=psgpu or ring, or "
                 "--compact_transfer_dtype=float16")


@dataclasses.dataclass(frozen=True)
class Exchange:
    """The plan's section: how gradients and variables move between towers and workers."""
    variable_update: str
    all_reduce_spec: Optional[str]  # resolved (None for modes without an exchange)
    gradient_repacking: int = 0
    # Packs of at most this many bytes (--gradient_pack_mb resolved: the GPU
    # default, None for counted packs or one pack per dtype).
    gradient_pack_bytes: Optional[int] = None
    # --gradient_pack_mb=auto: the size is measured in the warm-up
    # (engine/run/pack_tuning.py), gradient_pack_bytes being the first candidate's.
    tune_pack_size: bool = False
    compact_gradient_transfer: bool = False
    # What a compact transfer sends ("float16"/"bfloat16"), None without one.
    compact_transfer_dtype: Optional[str] = None
    variable_consistency: str = "strong"
    parameter_device: str = "cpu"
    sync_batch_norm: bool = False
    collective_timeout_secs: Optional[float] = None
    # collective_all_reduce: 'nccl' or 'ring', --collective_implementation resolved.
    collective_implementation: str = "ring"
    # Why all_reduce_spec is not the device's usual default (the header says
    # it), or None: the default was not changed.
    spec_note: Optional[str] = None

    def as_settings(self):
        """{setting: value} of the exchange as the run resolved it, for the
        records that list settings (the benchmark log)."""
        return {"all_reduce_spec": self.all_reduce_spec} if self.all_reduce_spec else {}

    @property
    def local_algorithm(self) -> Optional[str]:
        """What sums a worker's towers: replicated's spec, the part before the
        '/' of collective_all_reduce's (None for the flat collective, and for
        modes without an exchange)."""
        if not self.all_reduce_spec:
            return None
        if self.variable_update == "collective_all_reduce":
            return split_spec(self.all_reduce_spec)[0]
        return self.all_reduce_spec

    @property
    def cross_algorithm(self) -> Optional[str]:
        """What crosses workers: collective_all_reduce's 'xring' or
        'collective' (None in the other modes)."""
        if self.variable_update != "collective_all_reduce" or not self.all_reduce_spec:
            return None
        return split_spec(self.all_reduce_spec)[1]

    @property
    def spec_flag(self) -> str:
        """The exchange as a message names it: --all_reduce_spec=SPEC."""
        return f"--all_reduce_spec={self.all_reduce_spec or ''}"

    def describe(self) -> str:
        """The header's AllReduce line: the spec, why the machine changed its
        default (if it did), and the dtype a compact transfer sums in."""
        line = self.all_reduce_spec + (f" ({self.spec_note})" if self.spec_note else "")
        if self.compact_transfer_dtype:
            line += (f", gradients summed in {self.compact_transfer_dtype}"
                     " (--compact_gradient_transfer)")
        return line

    def describe_collectives(self) -> str:
        """The header's Collectives line: how the collectives that cross
        workers run (--collective_implementation)."""
        how = {"nccl": "NCCL between the workers' GPUs",
               "ring": "TensorFlow's ring over gRPC"}[self.collective_implementation]
        if self.collective_implementation == "nccl" and self.local_algorithm == "pscpu":
            how += f"; {self.all_reduce_spec}'s gradient packs cross from /cpu:0: ring"
        return f"{self.collective_implementation} ({how}; the step's scalars ride the last pack)"

    @classmethod
    def of(cls, settings, device, parameter_device, half, xla_compile,
           collective_timeout_secs, requested_implementation, split_towers=0):
        """The section for ExchangeSettings `settings` on towers of type `device`;
        half: the run's half-precision dtype, None in float32; split_towers:
        how many logical GPUs of one GPU the towers are (0: not split)."""
        spec = settings.spec_on(device, bool(split_towers), requested_implementation)
        usual = default_spec(settings.variable_update, device)
        return cls(
            variable_update=settings.variable_update,
            all_reduce_spec=spec,
            spec_note=(split_gpu_note(split_towers, usual)
                       if settings.all_reduce_spec is None and spec != usual else None),
            gradient_repacking=settings.gradient_repacking,
            gradient_pack_bytes=gradient_pack_bytes(settings, device, xla_compile),
            tune_pack_size=settings.gradient_pack_mb == AUTO_PACKS,
            compact_gradient_transfer=settings.compact_gradient_transfer,
            compact_transfer_dtype=compact_dtype(settings, half),
            variable_consistency=settings.variable_consistency,
            parameter_device=parameter_device, sync_batch_norm=settings.sync_batch_norm,
            collective_timeout_secs=collective_timeout_secs,
            collective_implementation=collective_implementation(requested_implementation,
                                                                device))


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


def gradient_pack_bytes(p, device, xla_compile):
    """The bytes per pack a run cuts its gradients into, or None (counted
    packs, or one pack per dtype; with auto, before its pick)."""
    if p.gradient_pack_mb == AUTO_PACKS:
        return None
    if p.gradient_pack_mb is not None:
        return max(1, round(p.gradient_pack_mb * 10**6)) if p.gradient_pack_mb else None
    if (device == "gpu" and p.variable_update in _EXCHANGING and not p.gradient_repacking
            and not xla_compile):
        return int(DEFAULT_GPU_PACK_MB * 10**6)
    return None


def compact_dtype(p, half):
    """The dtype a compact transfer sends (None without one): --compact_transfer_dtype,
    else the run's half-precision compute dtype `half` (None in float32), else float16."""
    if not p.compact_gradient_transfer:
        return None
    return p.compact_transfer_dtype or half or "float16"


# The exchange of an unset --all_reduce_spec when the towers are logical GPUs
# of one GPU (engine/process/devices.split_gpu): the GPU default sums through
# NCCL, which refuses two ranks on one GPU; the sum on the first GPU runs.
SPLIT_GPU_SPECS = {"replicated": "psgpu", "collective_all_reduce": "psgpu/xring"}


def split_gpu_note(towers, usual):
    """The header's reason for the spec SPLIT_GPU_SPECS chose over `usual`."""
    return (f"not {usual}: the {towers} towers are logical GPUs of one GPU, and NCCL "
            "refuses two ranks on one GPU")


def default_spec(variable_update, device, split_gpu=False, requested_implementation="auto"):
    """The exchange a mode uses when --all_reduce_spec is not given. For
    collective_all_reduce on CPU devices pscpu/xring (bench/bench_exchange.py
    (b) measured it faster than the flat one at 2 workers x 2 devices); on
    GPUs the flat collective, as MultiWorkerMirroredStrategy: NCCL's own
    all-reduce already crosses machines over several channels (one NIC each)
    and uses trees for small packs, it needs one NCCL communicator per GPU
    where scatter/xring needs two, and it meets none of the hierarchy's
    first-step ordering hazards (docs/exchange.md's cost model). split_gpu:
    the towers are logical GPUs of one GPU, where NCCL cannot run
    (SPLIT_GPU_SPECS; the flat collective over TensorFlow's ring still can)."""
    if (split_gpu and device == "gpu" and variable_update in SPLIT_GPU_SPECS
            and collective_implementation(requested_implementation, device) == "nccl"):
        return SPLIT_GPU_SPECS[variable_update]
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


def _validate_wire_dtype(p, device, spec, fail):
    """bfloat16 packs on GPUs that NCCL would carry are refused (as replicated's nccl)."""
    if (compact_dtype(p, p.use_bf16 and "bfloat16") == "bfloat16"
            and collective_implementation(p.collective_implementation, device) == "nccl"
            and split_spec(spec)[0] != "pscpu"):
        fail("compact_gradient_transfer", True, f"sends bfloat16, which NCCL cannot carry "
             f"(--all_reduce_spec={spec} crosses workers from GPUs); use "
             "--collective_implementation=ring or --compact_transfer_dtype=float16")


def _validate_pack_size(p, fail):
    pack_mb = p.gradient_pack_mb
    if pack_mb not in (None, AUTO_PACKS) and not 0 <= pack_mb < float("inf"):
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
        validate_implementation(p, device, spec or p.resolved_all_reduce_spec, fail)
        _validate_wire_dtype(p, device, spec or p.resolved_all_reduce_spec, fail)
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
