"""The header lines a run plan alone decides (towertrain.engine.run.header
lays them out between the lines that need the built model and TensorFlow)."""


def batch_size(plan):
    batches, topology = plan.batches, plan.topology
    return [f"{batches.global_batch} global",
            f"{batches.global_batch / topology.num_towers / topology.num_workers:g} per device"]


def global_batch(plan):
    """--global_batch_size's line: how this topology carries it."""
    batches, topology = plan.batches, plan.topology
    towers, workers = topology.num_towers, topology.num_workers
    accumulated = (f" x {batches.accumulation_steps} accumulation steps"
                   if batches.accumulation_steps > 1 else "")
    return (f"{batches.global_batch_size} per update (--global_batch_size): "
            f"{batches.per_device} per device x {towers} device{'s' * (towers > 1)} x "
            f"{workers} worker{'s' * (workers > 1)}{accumulated}; kept when the topology "
            "changes")


def num_batches(plan):
    """The timed steps; in an epoch run also what they are part of, since the
    warmup steps come out of the epochs."""
    steps = plan.steps
    if steps.num_epochs is None:
        return steps.timed
    return [f"{steps.timed} timed",
            f"of {steps.total} steps ({count(steps.num_epochs, 'epoch')}; "
            f"{warmup_phrase(steps.warmup)})"]


def count(number, noun):
    """'1 epoch', '2 epochs', '0.5 epochs'."""
    return f"{number:g} {noun}{'' if number == 1 else 's'}"


def warmup_phrase(warmup):
    """Which of the steps are warmup: 'the first 3 are warmup, untimed'."""
    if warmup == 0:
        return "no warmup"
    if warmup == 1:
        return "the first is warmup, untimed"
    return f"the first {warmup} are warmup, untimed"


def epoch(plan):
    """The epoch's length and where it came from (the dataset's known size,
    the files, the input or --num_examples_per_epoch); None without one."""
    steps = plan.steps
    if steps.epoch_source is None:
        return None
    examples = "" if steps.epoch_examples is None else f"{steps.epoch_examples:,} examples, "
    return (f"{examples}{steps.batches_per_epoch} batches of {plan.batches.global_batch} "
            f"({steps.epoch_source})")


def static_lines(plan):
    """{label: value} of the header lines the plan decides; a line that does
    not apply to this run is absent."""
    lines = {"Batch size": batch_size(plan), "Num batches": num_batches(plan),
             "Devices": str(list(plan.topology.tower_devices)),
             "Data format": plan.topology.data_format,
             "Variables": plan.exchange.variable_update}
    if epoch(plan) is not None:
        lines["Epoch"] = epoch(plan)
    if plan.topology.num_workers > 1:
        towers = plan.topology.num_towers
        lines["Cluster"] = (f"{plan.topology.num_workers} workers x "
                            f"{towers} device{'' if towers == 1 else 's'}")
    if plan.batches.global_batch_size is not None:
        lines["Global batch"] = global_batch(plan)
    if plan.steps.accumulation.accumulating:
        lines["Accumulation"] = plan.steps.accumulation.describe(plan.batches.global_batch)
    if plan.exchange.variable_update in ("replicated", "collective_all_reduce"):
        lines["AllReduce"] = plan.exchange.describe()
    if plan.topology.num_workers > 1:
        lines["Collectives"] = plan.exchange.describe_collectives()
    if plan.steps.eval_schedule is not None:
        lines["Eval"] = plan.steps.eval_schedule.describe()
    return lines
