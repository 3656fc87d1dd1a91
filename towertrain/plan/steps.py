"""How long a run is and when it evaluates, in global steps (updates).

One epoch is counted one way everywhere: its global batches (the input's, or
--num_examples_per_epoch's), and, with --gradient_accumulation_steps=K, its
updates (ceil(batches / K): an epoch's last update takes the batches left).
The step counter, --num_epochs, the eval schedule and the learning-rate
schedule's epoch boundaries all count updates.
"""
import math

from towertrain.errors import ParamsError
from towertrain.plan import accumulation as accumulation_lib
from towertrain.plan import eval_schedule
from towertrain.plan.sections import Steps

DEFAULT_NUM_BATCHES = 100

# Training examples per epoch of the datasets synthetic data stands in for
# (tf_cnn_benchmarks' datasets.py: ImageNet's train split, CIFAR-10's): what
# --num_epochs counts on synthetic data without --num_examples_per_epoch.
KNOWN_EXAMPLES_PER_EPOCH = {"imagenet": 1281167, "cifar10": 50000}


def epoch_batches(num_examples_per_epoch, input_steps_per_epoch, global_batch):
    """Global batches per epoch: the input's, or --num_examples_per_epoch's;
    None when neither says."""
    given = num_examples_per_epoch
    if given is None:
        return input_steps_per_epoch
    batches = math.ceil(given / global_batch)
    if input_steps_per_epoch is not None and input_steps_per_epoch != batches:
        raise ParamsError(f"--num_examples_per_epoch={given}: conflicts with the input's "
                          f"epoch of {input_steps_per_epoch} steps of {global_batch}; drop it")
    return batches


def warmup_and_timed(params, updates_per_epoch):
    """(warmup, timed) step counts. With --num_epochs the warmup steps are
    part of the epochs, so every example is trained on once per epoch."""
    if params.num_epochs is None:
        timed = DEFAULT_NUM_BATCHES if params.num_batches is None else params.num_batches
        return params.num_warmup_batches, timed
    if not updates_per_epoch:
        raise ParamsError(f"--num_epochs={params.num_epochs}: needs the epoch length "
                          "(--data_dir, --num_examples_per_epoch, or an input with "
                          "num_examples); this input has none")
    total = params.num_epochs * updates_per_epoch
    warmup = min(params.num_warmup_batches, total - 1)
    return warmup, total - warmup


def warmup_of_run(warmup, start_step, total_steps):
    """The untimed steps of a run from `start_step` to `total_steps` (a resumed
    run warms up again): the plan's warmup, leaving at least one timed step."""
    return min(warmup, max(total_steps - start_step - 1, 0))


def warmup_fence(start_step, warmup):
    """The step after which a staged run fences in warm-up (None: it does not).

    A step before a fence or the run's end only drains (the step function's
    put=False variant), and that variant's first call builds it (~2 s for
    resnet20 on 2 CPU devices). With 2 or more warm-up steps a fence after
    the first makes that call untimed (engine/feed/position.py); the
    summaries' warm-up plan (callbacks/summaries.py) counts on it."""
    return start_step + 1 if warmup >= 2 else None


def epoch_origin(params, input_facts, dataset):
    """(examples per epoch, where they come from) for the header; with
    --num_epochs on synthetic data and no --num_examples_per_epoch, the
    dataset's known size. (None, None) when nothing says."""
    if params.num_examples_per_epoch is not None:
        return params.num_examples_per_epoch, "--num_examples_per_epoch"
    if input_facts.steps_per_epoch is not None:
        return input_facts.num_examples, ("the files in --data_dir" if params.data_dir
                                          else "the input")
    if input_facts.synthetic and params.num_epochs is not None and (
            dataset in KNOWN_EXAMPLES_PER_EPOCH):
        return KNOWN_EXAMPLES_PER_EPOCH[dataset], (
            f"{dataset}'s known training size, as tf_cnn_benchmarks; the data is synthetic")
    return None, None


def check_batch_fits_epoch(params, input_facts, global_batch, split):
    """Refuses a global batch larger than an epoch of real data where
    towertrain cuts the epochs: the files of --data_dir, or an endless
    in-memory input that Params(num_epochs) makes exact epochs. Each epoch
    would be one partial batch of all its examples (epochs end with their
    partial batch), so no step would train on the batch asked for, while the
    header and the learning-rate scaling count that batch. A last partial
    batch after full ones (34 examples in 16s: 16, 16, 2) is an epoch's
    normal end and passes; so does synthetic data (it fills every batch), an
    input that repeats without epochs (its batches run across them), one
    built with its own epochs (from_arrays(num_epochs=K), repeat=False: its
    partial batches are the ones asked for), and --eval (no training batch).

    split: (per device, devices per worker, workers) of the plan's batch."""
    examples = input_facts.num_examples
    if (params.eval or input_facts.user_epochs or input_facts.steps_per_epoch is None
            or not examples or examples >= global_batch):  # synthetic: no examples
        return
    per_device, towers, workers = split
    devices = towers * workers
    if input_facts.user_input:  # an endless input of the user's, cut by Params(num_epochs)
        entry_point = input_facts.user_input
        raise ParamsError(
            f"--num_epochs={params.num_epochs}: {entry_point}'s global_batch={global_batch} is "
            f"larger than its {examples} examples, so no step of an epoch would train on a "
            f"full batch; give {entry_point} a global_batch of at most {examples}")
    where = (f"{per_device} per device x {towers} device{'s' * (towers > 1)} x {workers} "
             f"worker{'s' * (workers > 1)}")
    fix = (f"use a smaller --batch_size (at most {examples // devices} per device) or fewer "
           "devices" if examples >= devices else f"use at most {examples} devices")
    source = epoch_origin(params, input_facts, None)[1]
    raise ParamsError(
        f"--batch_size={per_device}: the global batch of {global_batch} ({where}) is larger "
        f"than the {examples} examples of an epoch ({source}), so no step would train on a "
        f"full batch; {fix}")


def plan_steps(params, input_facts, global_batch, dataset=None,
               accumulation_steps=None) -> Steps:
    """The Steps section: length, epochs, accumulation and the eval schedule.
    input_facts: the plan's InputFacts; dataset: the run's (for its known size);
    accumulation_steps: the layout's (default: --gradient_accumulation_steps)."""
    examples, source = epoch_origin(params, input_facts, dataset)
    input_steps_per_epoch = input_facts.steps_per_epoch
    if input_steps_per_epoch is None and examples is not None:
        input_steps_per_epoch = math.ceil(examples / global_batch)  # synthetic: known size
    batches_per_epoch = epoch_batches(params.num_examples_per_epoch, input_steps_per_epoch,
                                      global_batch)
    accumulation = accumulation_lib.AccumulationPlan(
        accumulation_steps or params.gradient_accumulation_steps, batches_per_epoch)
    warmup, timed = warmup_and_timed(params, accumulation.updates_per_epoch)
    schedule = eval_schedule.for_params(params, warmup + timed,
                                        accumulation.updates_per_epoch)
    return Steps(warmup=warmup, timed=timed, num_epochs=params.num_epochs,
                 batches_per_epoch=batches_per_epoch, accumulation=accumulation,
                 eval_schedule=schedule,
                 epoch_examples=examples if batches_per_epoch else None,
                 epoch_source=source if batches_per_epoch else None)
