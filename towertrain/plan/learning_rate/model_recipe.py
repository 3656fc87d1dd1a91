"""A model's own learning-rate recipe (towertrain.models.recipes) in steps:
its rates scaled for the run's global batch and gradient exchange, its epochs
counted as tf_cnn_benchmarks counts them (towertrain.plan.learning_rate.source
says when a run trains with it).

The recipe's step is tf_cnn_benchmarks' effective step. There, each tower's
gradient is the mean over its own batch; --variable_update=replicated and
collective_all_reduce sum the N towers' gradients (N = every device of every
worker), parameter_server averages them. towertrain always applies the mean
over the global batch (docs/migration.md), so the recipe's rate is
multiplied by N where tf_cnn_benchmarks sums: the update is the same.
"""
from towertrain.errors import ParamsError
from towertrain.models import recipes as recipes_lib
from towertrain.plan import steps as steps_lib
from towertrain.plan.learning_rate import schedule as schedule_lib

# The modes whose tf_cnn_benchmarks counterpart sums the towers' gradients.
SUMMING_MODES = ("replicated", "collective_all_reduce")


def epochs_to_steps(rule, epochs, examples, batch):
    """E epochs as steps under `rule` (towertrain.models.recipes.EPOCH_STEPS),
    in tf_cnn_benchmarks' own float/integer arithmetic."""
    if rule == "fraction":
        return int(examples / batch * epochs)
    if rule == "whole":
        return int(examples // batch * epochs)
    if rule == "total":
        return int(epochs * examples // batch)
    raise ValueError(f"epoch_steps must be one of {', '.join(recipes_lib.EPOCH_STEPS)}, "
                     f"got {rule!r}")


def tfcnn_sum(variable_update, towers_per_worker, num_workers):
    """How many towers' gradients tf_cnn_benchmarks adds in this mode (1: it averages)."""
    return towers_per_worker * num_workers if variable_update in SUMMING_MODES else 1


def learning_rate(recipe, model, global_batch, examples, epoch_source, variable_update,
                  towers_per_worker, num_workers, per_device=None):
    """The LearningRate of `model`'s recipe for a global batch of `global_batch`
    examples (per device x devices x workers: what tf_cnn_benchmarks passes its
    get_learning_rate) and an epoch of `examples`; epoch_source: where that
    number comes from (the header says); per_device: --batch_size, for messages."""
    r = recipe
    scale, parts = 1.0, []
    if r.divide_in_replicated and variable_update == "replicated":
        scale /= towers_per_worker
        parts.append(f" / {towers_per_worker} devices (replicated)")
    if r.per_examples is not None:
        scale *= global_batch / r.per_examples
        parts.append(f" x {global_batch}/{r.per_examples}")
    summed = tfcnn_sum(variable_update, towers_per_worker, num_workers)
    if summed > 1:
        scale *= summed
        parts.append(f" x {summed} (tf_cnn_benchmarks' {variable_update} sums the "
                     f"{summed} devices' gradients; towertrain averages them)")

    def steps(epochs):
        return epochs_to_steps(r.epoch_steps, epochs, examples, global_batch)

    # tf.train.piecewise_constant keeps the earlier value on the boundary's own
    # step: the later one starts a step after it.
    boundaries = tuple(steps(e) + 1 for e in r.boundary_epochs)
    decay_steps = steps(r.decay_epochs) if r.decay_epochs is not None else None
    if decay_steps is not None and decay_steps < 1:
        raise ParamsError(f"--batch_size={per_device}: a global batch of {global_batch} is "
                          f"more than {model}'s decay interval of {r.decay_epochs:g} epochs of "
                          f"{examples} examples; use a smaller batch or --init_learning_rate")
    epoch_text = (f"epoch = {examples:,} examples / {global_batch} "
                  f"({epoch_source})")
    return schedule_lib.LearningRate(
        kind=r.kind, base_values=tuple(float(v) for v in r.values), scale=scale,
        boundaries=boundaries, boundary_epochs=tuple(r.boundary_epochs),
        decay_steps=decay_steps, decay_factor=r.decay_factor, decay_epochs=r.decay_epochs,
        warmup_steps=steps(r.warmup_epochs) if r.warmup_epochs else 0,
        warmup_epochs=r.warmup_epochs or None, global_batch=global_batch,
        warmup_from_zero=True, scale_text="".join(parts) or None, epoch_text=epoch_text,
        origin=f"{model}'s recipe" + (f", as {r.origin}" if r.origin else ""),
        source="recipe")


def epoch_of(params, input_facts, steps, dataset, global_batch):
    """(examples per epoch, where they come from) for an epoch-based schedule:
    the run's epoch, else on synthetic data (or an input that does not say)
    the dataset's known size, as tf_cnn_benchmarks and --num_epochs take it."""
    if steps.epoch_examples:
        return steps.epoch_examples, steps.epoch_source
    if steps.batches_per_epoch:  # an input that counts batches, not examples
        return steps.batches_per_epoch * global_batch, "the input's steps per epoch"
    if dataset in steps_lib.KNOWN_EXAMPLES_PER_EPOCH and params.num_examples_per_epoch is None:
        why = "the data is synthetic" if input_facts.synthetic else "the input does not say"
        return steps_lib.KNOWN_EXAMPLES_PER_EPOCH[dataset], (
            f"{dataset}'s known training size, as tf_cnn_benchmarks; {why}")
    return None, None
