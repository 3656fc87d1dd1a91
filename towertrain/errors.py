"""Errors a run stops with; the CLI prints their message as one line and exits 2."""


class TrainingDivergedError(RuntimeError):
    """A loss or gradient became NaN or Inf; nothing from that step was applied
    and no non-finite state was saved."""
