"""Checks of the observability flags (TensorBoard summaries, traces,
profiles), kept apart from params.py so each file stays small."""


def parse_profile_steps(text):
    """'A,B' -> (A, B): the first and last global step profiled."""
    parts = text.split(",")
    if len(parts) != 2 or not all(part.strip().isdigit() for part in parts):
        raise ValueError("must be two step numbers A,B")
    first, last = (int(part) for part in parts)
    if not 1 <= first <= last:
        raise ValueError("needs 1 <= A <= B")
    return first, last


def validate_observe(p, fail):
    """fail(flag, value, message) raises ParamsError."""
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
