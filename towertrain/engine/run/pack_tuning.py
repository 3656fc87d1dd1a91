"""--gradient_pack_mb=auto: the pack size measured in the warm-up steps.

The candidates are one pack per dtype, then packs of at most 64, 16, 4 and
1 MB (Horovod's fusion buffer down to a size where a pack's fixed cost starts
to show), each kept only where it cuts this model's gradients into another
plan than every candidate before it (a 1.1 MB model has two: one pack, and
two packs of at most 1 MB). Only sizes are candidates, not --all_reduce_spec:
across workers every collective group a spec uses is opened before step 1 in
one fixed order (engine/exchange/cross_worker.py), and another spec would
open other groups mid-run.

In the run's warm-up steps each candidate trains `steps_each` real steps
(warm-up steps // candidates, at least 2), the candidates in turn (one step
each, round after round, so a drift of the machine's load or the run's own
first-steps costs falls on every candidate alike): the first round builds
each candidate's step function and is not timed (the trainer keeps them all
until the pick), a candidate's time is the fastest of its later steps. Every plan sums the same elements in the same device order (a
pack is a slice of the one-pack concatenation), so training goes on exactly
as on any one of them. Across workers (collective_all_reduce) every worker
runs the same candidates at the same steps, then one collective takes each
candidate's slowest worker time (max over the workers: the step waits for
the slowest), and every worker picks from the same numbers: one decision,
the same everywhere. A smaller size is taken only when it is faster by more
than PICK_MARGIN (the pick is the first candidate within it of the fastest:
the larger packs win what two timed steps cannot tell apart). The rest of
the run, and the warm-up steps left, train on the pick.

A resume of an auto run takes the run record's pick instead of timing again
(multi-worker, the chief's, through one collective); a run record without
one (the run stopped before its pick) times again.
"""
import time

from towertrain.engine.exchange import packing
from towertrain.errors import ParamsError

# The candidate sizes after one pack per dtype, in MB (10**6 bytes), largest first.
CANDIDATE_MB = (64.0, 16.0, 4.0, 1.0)
MIN_STEPS_EACH = 2  # one that builds the candidate's step function, one timed
# On an idle 2-core CPU one size's median step moved by up to 4% from run to
# run, and cifar_cnn's sizes lay within 6% of each other (bench_pack_plan):
# the fastest of two timed steps cannot rank sizes closer than a few percent.
PICK_MARGIN = 0.03
NONE_RECORDED = -1.0  # a worker's side of the resume's collective: no pick to give


def candidates(variables):
    """The candidate pack sizes in MB (0: one pack per dtype) that cut
    `variables` into distinct plans, in the order they are timed."""
    found, plans = [], set()
    for mb in (0.0,) + CANDIDATE_MB:
        counts = _pack_counts(variables, pack_bytes(mb))
        if counts not in plans:
            plans.add(counts)
            found.append(mb)
    return found


def pick_index(times):
    """The candidate to train on, from each candidate's time (largest packs
    first): the first within PICK_MARGIN of the fastest. A smaller size
    replaces a larger one only for a gain the few timed steps can tell from
    noise; the larger packs launch fewer collectives, whose fixed cost grows
    with the network's latency."""
    fastest = min(times)
    return next(i for i, t in enumerate(times) if t <= fastest * (1 + PICK_MARGIN))


def pack_bytes(mb):
    """The plan's gradient_pack_bytes of a size in MB (None: one pack per dtype)."""
    return int(mb * 10**6) if mb else None


def _pack_counts(variables, size):
    """Packs per dtype: a plan's signature (for each dtype the count decides the cut)."""
    counts = {}
    for pack in packing.plan(variables, 0, size):
        counts[pack.dtype.name] = counts.get(pack.dtype.name, 0) + 1
    return tuple(sorted(counts.items()))


def size_text(mb):
    return "one pack per dtype" if not mb else f"{mb:g} MB"


class PackTuning:
    """The warm-up's timing of the candidate plans of one run.

    variables: the model's trainable variables (what the packs cut);
    install(pack_bytes): makes the trainer's step exchange packs of that size
    (None: one pack per dtype); cluster_max(values, site): each value's
    maximum over the workers (a site names the collective; one process: the
    values); wire_dtype: what a half-precision transfer sends (the lines
    size the packs in it), else None."""

    def __init__(self, variables, install, cluster_max, wire_dtype=None):
        self.variables, self.wire_dtype = variables, wire_dtype
        self.candidates = candidates(variables)
        self._install, self._cluster_max = install, cluster_max
        self.pick = None  # MB (0: one pack per dtype) once known
        self.kept = False  # the pick is the run record's, kept at a resume
        self.started = False
        self.times = []  # seconds per candidate (the slowest worker's fastest step)
        self._mine = []  # this worker's step times per candidate
        self._steps = 0  # tuning steps run
        self.steps_each = 0
        self.first_step = None
        self._write = self._on_pick = None

    @property
    def tuning(self):
        return self.started and self.pick is None

    def start(self, first_step, warmup, recorded=None, resumed=False, write=None,
              on_pick=None):
        """Before the run's first step (global step `first_step` - 1 done),
        with `warmup` untimed steps ahead. recorded: the run record's pick in
        MB (None: none; a non-chief worker passes None); resumed: the run
        resumed from a checkpoint (every worker alike), so the chief's
        recorded pick is every worker's. write: where the pick's line goes;
        on_pick(entry): given the run record's entry of a timed pick."""
        self.started, self._write, self.first_step = True, write, first_step
        self._on_pick = on_pick
        if resumed:
            offered = self._cluster_max([NONE_RECORDED if recorded is None else recorded],
                                        "pack_pick")[0]
            if offered != NONE_RECORDED:
                self.kept = True
                self._take(float(offered))
                return
        if len(self.candidates) == 1:
            self._take(self.candidates[0])
            return
        needed = MIN_STEPS_EACH * len(self.candidates)
        if warmup < needed:
            raise ParamsError(
                f"--gradient_pack_mb=auto: times {len(self.candidates)} pack sizes for this "
                f"model ({', '.join(size_text(mb) for mb in self.candidates)}), "
                f"{MIN_STEPS_EACH} warm-up steps each, but this run has {warmup} warm-up "
                f"step{'' if warmup == 1 else 's'}; raise --num_warmup_batches to {needed} "
                "or more, or give a size (--gradient_pack_mb=4)")
        self.steps_each = warmup // len(self.candidates)
        self._mine = [[] for _ in self.candidates]

    def run_step(self, step):
        """Runs `step()` (one training step) on the candidate whose turn it
        is, timed after its first round; the pick after the last."""
        count = len(self.candidates)
        index = self._steps % count
        self._install(pack_bytes(self.candidates[index]))
        started = time.perf_counter()
        result = step()
        seconds = time.perf_counter() - started
        if self._steps >= count:  # the first round builds each candidate's step
            self._mine[index].append(seconds)
        self._steps += 1
        if self._steps == self.steps_each * count:
            self._decide()
        return result

    def _decide(self):
        fastest = [min(times) for times in self._mine]
        self.times = [float(t) for t in self._cluster_max(fastest, "pack_timings")]
        self._take(self.candidates[pick_index(self.times)])
        if self._write is not None:
            self._write(f"Gradient packs: picked {self.describe_pick()} "
                        f"({self.timings_text()})")
        if self._on_pick is not None:
            self._on_pick(self.record_entry())

    def _take(self, mb):
        self.pick = mb
        self._install(pack_bytes(mb))

    def describe_pick(self):
        """The pick and its packs, e.g. '4 MB: 2 packs (of at most 4.0 MB, ...): ...'."""
        return (f"{size_text(self.pick)}: "
                f"{packing.describe(self.variables, 0, pack_bytes(self.pick), self.wire_dtype)}")

    def timings_text(self):
        last = self.first_step + self.steps_each * len(self.candidates) - 1
        return (f"timed in warm-up steps {self.first_step}..{last}, the fastest of "
                f"{self.steps_each - 1} step{'' if self.steps_each == 2 else 's'} each: "
                + ", ".join(f"{size_text(mb)} {seconds * 1000:.1f} ms"
                            for mb, seconds in zip(self.candidates, self.times)))

    def header_text(self):
        """The header's Gradient packs line at the run's start."""
        if self.kept:
            return (f"auto: {self.describe_pick()} (the run record's pick, kept at the "
                    "resume: not timed again)")
        if self.pick is not None:
            return (f"auto: {self.describe_pick()} (the only distinct plan of this model's "
                    "gradients: nothing to time)")
        last = self.first_step + self.steps_each * len(self.candidates) - 1
        return (f"auto: timing {len(self.candidates)} sizes in turn in warm-up steps "
                f"{self.first_step}..{last}, {self.steps_each} steps each: "
                f"{', '.join(size_text(mb) for mb in self.candidates)}")

    def record_entry(self):
        """The run record's entry of the pick (run_record.PACK_PICK)."""
        entry = {"pack_mb": self.pick}
        if self.times:
            entry.update(candidates_mb=list(self.candidates),
                         step_ms=[round(t * 1000, 3) for t in self.times])
        return entry
