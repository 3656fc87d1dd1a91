"""--gradient_pack_mb=auto: the pack size measured in the warm-up steps.

The candidates are one pack per dtype, then packs of at most 64, 16, 4 and
1 MB (Horovod's fusion buffer down to a size where a pack's fixed cost starts
to show), each kept only where it cuts this model's gradients into another
plan than every candidate before it (a 1.1 MB model has two: one pack, and
two packs of at most 1 MB). Only sizes are candidates, not --all_reduce_spec:
across workers every collective group a spec uses is opened before step 1 in
one fixed order (engine/exchange/cross_worker.py), and another spec would
open other groups mid-run.

In the run's warm-up steps the candidates are timed largest packs first,
each for `steps_each` real steps in a row (warm-up steps // candidates, at
least 2): the first builds the candidate's step function and is not timed,
its time is the fastest of the others. After each candidate but the first,
it is compared with the one before it, and the timing stops at the first
that is not faster by more than PICK_MARGIN: the pick is the one before it
(the larger packs win what two timed steps cannot tell apart), and no
smaller size is built. A step's time against its pack size falls while
more packs hide more of the exchange behind the backward pass, then rises
with each collective's fixed cost, so the first size that does not gain
ends the descent; each candidate not built saves the run a trace and a
graph build of its step (the tuning's main cost).
Every plan sums the same elements in the same device order (a pack is a
slice of the one-pack concatenation), so training goes on exactly as on any
one of them. Across workers (collective_all_reduce) every worker runs the
same candidates at the same steps, and each comparison takes both
candidates' slowest worker time through one collective (max over the
workers: the step waits for the slowest), so every worker decides from the
same numbers: one decision, the same everywhere. The rest of the run, and
the warm-up steps left, train on the pick.

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


def beats(challenger, incumbent):
    """Whether a smaller size's time `challenger` replaces the larger packs'
    `incumbent`: only for a gain the few timed steps can tell from noise
    (more than PICK_MARGIN); the larger packs launch fewer collectives, whose
    fixed cost grows with the network's latency."""
    return challenger * (1 + PICK_MARGIN) < incumbent


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
        self.times = []  # seconds per timed candidate (the slowest worker's fastest step)
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
        is, timed after its first step; after each candidate's last step
        but the first's, the comparison with the one before it."""
        index, position = divmod(self._steps, self.steps_each)
        self._install(pack_bytes(self.candidates[index]))
        started = time.perf_counter()
        result = step()
        seconds = time.perf_counter() - started
        if position:  # the first step builds the candidate's step function
            self._mine[index].append(seconds)
        self._steps += 1
        if index and position == self.steps_each - 1:
            self._compare(index)
        return result

    def _compare(self, index):
        """Candidate `index` against the one before it, on every worker's
        numbers: it goes on to the next while it gains, else the one before
        it is the pick (also after the last candidate)."""
        before, here = (float(t) for t in self._cluster_max(
            [min(self._mine[index - 1]), min(self._mine[index])], "pack_timings"))
        self.times[index - 1:] = [before, here]
        gained = beats(here, before)
        if gained and index < len(self.candidates) - 1:
            return
        self._take(self.candidates[index if gained else index - 1])
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
        timed = self.candidates[:len(self.times)]
        text = (f"timed in warm-up steps {self._steps_text(len(timed))}, the fastest of "
                f"{self.steps_each - 1} step{'' if self.steps_each == 2 else 's'} each: "
                + ", ".join(f"{size_text(mb)} {seconds * 1000:.1f} ms"
                            for mb, seconds in zip(timed, self.times)))
        if len(timed) < len(self.candidates):
            text += (f"; {size_text(timed[-1])} not more than {PICK_MARGIN:.0%} faster: "
                     f"{', '.join(size_text(mb) for mb in self.candidates[len(timed):])} "
                     "not timed")
        return text

    def header_text(self):
        """The header's Gradient packs line at the run's start."""
        if self.kept:
            return (f"auto: {self.describe_pick()} (the run record's pick, kept at the "
                    "resume: not timed again)")
        if self.pick is not None:
            return (f"auto: {self.describe_pick()} (the only distinct plan of this model's "
                    "gradients: nothing to time)")
        return (f"auto: timing up to {len(self.candidates)} sizes, largest packs first, in "
                f"warm-up steps {self._steps_text(len(self.candidates))} at most, "
                f"{self.steps_each} steps "
                f"each, until one is not more than {PICK_MARGIN:.0%} faster than the one "
                f"before: {', '.join(size_text(mb) for mb in self.candidates)}")

    def _steps_text(self, count):
        """The warm-up steps `count` candidates take, e.g. '1..6'."""
        return f"{self.first_step}..{self.first_step + self.steps_each * count - 1}"

    def record_entry(self):
        """The run record's entry of the pick (run_record.PACK_PICK)."""
        entry = {"pack_mb": self.pick}
        if self.times:
            entry.update(candidates_mb=list(self.candidates[:len(self.times)]),
                         step_ms=[round(t * 1000, 3) for t in self.times])
        return entry
