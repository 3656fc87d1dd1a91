"""Where a run's epochs are decided: --num_epochs against the input's own.

An input may bring its epochs (from_arrays(num_epochs=K) ends after K passes)
and Params may ask for them (num_epochs=P); when both speak they must agree,
and a finite input must last as many steps as the run takes, else the run
would end in tf.data's `OUT_OF_RANGE: End of sequence` mid-way. An in-memory
input that repeats without end knows its length, so Params(num_epochs=P)
rebuilds it as P exact epochs. Refusals come before anything is built.
"""
import math

from towertrain.errors import ParamsError


def _entry_point(input_source):
    return getattr(input_source, "entry_point", None) or getattr(
        input_source, "origin", None) or type(input_source).__name__


def entry_point_name(input_source):
    """How messages name a user's input: its entry point (from_arrays, ...)."""
    return (getattr(input_source, "origin", "") or "").split(":")[0] or _entry_point(input_source)


def agree(num_epochs, input_source):
    """The input to train on, its epochs agreed with --num_epochs (`num_epochs`);
    raises ParamsError naming both settings when they differ."""
    wanted = num_epochs
    given = getattr(input_source, "num_epochs", None)
    if wanted is None or input_source is None:
        return input_source
    if given is None:
        with_epochs = getattr(input_source, "with_epochs", None)
        rebuilt = with_epochs(wanted) if with_epochs is not None else None
        return rebuilt if rebuilt is not None else input_source
    if given != wanted:
        name = entry_point_name(input_source)
        raise ParamsError(f"--num_epochs={wanted}: Params(num_epochs={wanted}) and "
                          f"{name}(num_epochs={given}) disagree; give the epochs once: in "
                          f"Params, and leave num_epochs out of {name}")
    return input_source


def check_enough_input(num_epochs, input_source, total_steps, global_batch):
    """No --num_epochs (`num_epochs`) on a finite input: the input must last the run."""
    given = getattr(input_source, "num_epochs", None)
    if num_epochs is not None or given is None:
        return
    examples = getattr(input_source, "num_examples", None)
    if not examples or not global_batch:
        return
    available = given * math.ceil(examples / global_batch)
    if total_steps > available:
        name = entry_point_name(input_source)
        raise ParamsError(
            f"--num_epochs: the input ({name}, num_epochs={given}) ends after {available} "
            f"steps, but Params has no num_epochs and asks for {total_steps} steps "
            f"(num_warmup_batches + num_batches); give Params(num_epochs={given}) and "
            f"leave num_epochs out of {name}")
