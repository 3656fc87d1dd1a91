"""What a run shows and writes as it trains, declared beside the loop whose
callbacks read it (towertrain.callbacks: the step printer, summaries,
traces, the graph file, the benchmark log, profiles; that package imports
TensorFlow, so its settings are declared here, with the loop that runs
them), with their refusals.
"""
from typing import Optional

from towertrain.config.declare import NOT_USED, section, setting, tfcnn


@section("Training")
class Display:
    display_every: int = setting(
        10, "Print a step line every this many steps.",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("integer", 10),
        forward_only=True)
    display_perf_ewma: Optional[float] = setting(
        None, "Step lines show images/sec as an exponentially weighted average of "
        "step times with this weight on the newest step (0 < w <= 1) instead "
        "of the plain average.",
        training_only=True, scaling=NOT_USED, tfcnn=tfcnn("float", None))

    @staticmethod
    def refuse(p, fail):
        if p.display_every < 1:
            fail("display_every", p.display_every, "must be >= 1")
        if p.display_perf_ewma is not None and not 0 < p.display_perf_ewma <= 1:
            fail("display_perf_ewma", p.display_perf_ewma, "must be in (0, 1]")

    def is_display_step(self, step, timed):
        """Whether step `step`, the `timed`-th timed one, gets a step line: the
        first timed step, then every --display_every global steps."""
        return timed == 1 or step % self.display_every == 0


@section("Summaries and traces")
class Observe:
    summary_verbosity: int = setting(
        0, "TensorBoard summaries: 0 off; 1 loss, learning rate, images/sec, "
        "gradient norm, loss scale, training top-1, input wait; 2 also "
        "gradient histograms; 3 also weight histograms.",
        scaling=NOT_USED, tfcnn=tfcnn("integer", 0),
        forward_only=False)
    save_summaries_steps: int = setting(
        100, "Write summaries every this many steps (0: none, as in "
        "tf_cnn_benchmarks).",
        scaling=NOT_USED, tfcnn=tfcnn("integer", 0, "default 100 in towertrain"),
        forward_only=False)
    summary_dir: Optional[str] = setting(
        None, "Where event files go (default: --train_dir; eval results in its "
        "eval/ subfolder).",
        scaling=NOT_USED, path=True,
        forward_only=False)
    print_training_accuracy: bool = setting(
        False, "Print training top-1 on the step lines.",
        scaling=NOT_USED, tfcnn=tfcnn("boolean", False),
        forward_only=False)
    trace_file: Optional[str] = setting(
        None, "Write a Chrome/Perfetto trace (.json) of one step: each device's "
        "compute, the copies and the all-reduce.",
        scaling=NOT_USED, path=True,
        tfcnn=tfcnn("string", "", "a Chrome/Perfetto trace of one step", unset=True),
        forward_only=False)
    trace_step: Optional[int] = setting(
        None, "The global step --trace_file traces (default: the first after "
        "warmup).",
        scaling=NOT_USED,
        forward_only=False)
    use_chrome_trace_format: bool = setting(
        True, "--trace_file in Chrome trace format (JSON); off: the profiler's raw "
        "XSpace proto, in text format.",
        scaling=NOT_USED, tfcnn=tfcnn("boolean", True))
    graph_file: Optional[str] = setting(
        None, "Write the training step's graph (a GraphDef with shapes) to this "
        "file before the first step: text if the name ends in 'txt', else "
        "binary.",
        training_only=True, scaling=NOT_USED, path=True, tfcnn=tfcnn("string", None),
        forward_only=False)
    benchmark_log_dir: Optional[str] = setting(
        None, "Write machine-readable results here: benchmark_run.log (the run, one "
        "JSON object) and metric.log (one JSON object per line: images/sec "
        "per display step, the average, accuracy).",
        training_only=True, scaling=NOT_USED, path=True, tfcnn=tfcnn("string", None),
        forward_only=False)
    profile_steps: Optional[str] = setting(
        None, "'A,B': a TensorBoard profile of global steps A to B, under the "
        "summary directory.",
        scaling=NOT_USED,
        forward_only=False)

    @staticmethod
    def refuse(p, fail):
        if p.summary_verbosity not in (0, 1, 2, 3):
            fail("summary_verbosity", p.summary_verbosity, "must be 0 (off), 1 (scalars), "
                 "2 (+ gradient histograms) or 3 (+ weight histograms)")
        if p.save_summaries_steps < 0:
            fail("save_summaries_steps", p.save_summaries_steps,
                 "must be >= 1, or 0 for no summaries (as in tf_cnn_benchmarks)")
        if p.save_summaries_steps == 0 and p.summary_verbosity:
            fail("summary_verbosity", p.summary_verbosity, "asks for summaries, but "
                 "--save_summaries_steps=0 turns them off; drop one")
        if p.summary_verbosity and not (p.train_dir or p.summary_dir):
            fail("summary_verbosity", p.summary_verbosity,
                 "needs --train_dir or --summary_dir to write the event files into")
        if p.summary_dir and not p.summary_verbosity and p.profile_steps is None:
            # --profile_steps alone writes its profile there (Outputs.logdir).
            fail("summary_dir", p.summary_dir, "needs --summary_verbosity >= 1 or --profile_steps "
                 "(with neither, nothing is written there)")
        if p.trace_step is not None:
            if p.trace_step < 1:
                fail("trace_step", p.trace_step, "must be >= 1")
            if not p.trace_file:
                fail("trace_step", p.trace_step, "needs --trace_file to write the trace into")
            if p.trace_step <= p.num_warmup_batches:
                # A warm-up step traces the step function and fills the pipeline:
                # its trace would show that, not a training step.
                fail("trace_step", p.trace_step,
                     f"is inside the warm-up (--num_warmup_batches={p.num_warmup_batches}: "
                     f"steps 1..{p.num_warmup_batches}); choose a step after it, or leave "
                     f"--trace_step out to trace the first timed step")
        if p.trace_file and p.use_chrome_trace_format and not p.trace_file.endswith(".json"):
            fail("trace_file", p.trace_file, "must end in .json (a Chrome/Perfetto trace; "
                 "--nouse_chrome_trace_format writes the raw proto under any name)")
        if p.profile_steps is not None:
            try:
                parse_profile_steps(p.profile_steps)
            except ValueError as err:
                fail("profile_steps", p.profile_steps, str(err))
            if not (p.train_dir or p.summary_dir):
                fail("profile_steps", p.profile_steps,
                     "needs --train_dir or --summary_dir to write the profile into")

    @property
    def summaries_on(self) -> bool:
        """Whether the run writes TensorBoard summaries (scalars at least)."""
        return self.summary_verbosity >= 1

    @property
    def summarizes_gradients(self) -> bool:
        """Whether the summaries hold the gradients' histograms (the step hands
        out the summed gradients, not only their norm)."""
        return self.summary_verbosity >= 2

    @property
    def writes_logdir(self) -> bool:
        """Whether anything goes into the summary directory (--summary_dir, else
        --train_dir): summaries, or a profile."""
        return bool(self.summary_verbosity or self.profile_steps)

    @staticmethod
    def refuse_given(p, explicit, fail):
        if "use_chrome_trace_format" in explicit and not p.trace_file:
            fail("use_chrome_trace_format", p.use_chrome_trace_format,
                 "only applies with --trace_file")


def parse_profile_steps(text):
    """'A,B' -> (A, B): the first and last global step profiled."""
    parts = text.split(",")
    if len(parts) != 2 or not all(part.strip().isdigit() for part in parts):
        raise ValueError("must be two step numbers A,B")
    first, last = (int(part) for part in parts)
    if not 1 <= first <= last:
        raise ValueError("needs 1 <= A <= B")
    return first, last
