"""How much one evaluation reads: --num_eval_batches / --num_eval_epochs.

tf_cnn_benchmarks evaluates a number of full batches: --num_eval_batches of
them, or ceil(--num_eval_epochs x split size / batch); the split repeats as
often as needed. Without either flag towertrain reads the split exactly once
(every example counted once, the last batch partial), where tf_cnn_benchmarks
would fall back to --num_batches batches.
"""
from towertrain.input_pipeline.arrays import InputError
from towertrain.input_pipeline.base import EvalData


def num_batches(num_examples, batch_size, num_eval_batches=None, num_eval_epochs=None):
    """The batches --num_eval_batches / --num_eval_epochs ask for, or None
    (the split once)."""
    if num_eval_batches is not None:
        return num_eval_batches
    if num_eval_epochs is None:
        return None
    if not num_examples:
        raise InputError(f"--num_eval_epochs={num_eval_epochs:g}: the eval set's "
                         "size is unknown; use --num_eval_batches")
    return int(num_eval_epochs * num_examples + batch_size - 1) // batch_size


def limit(eval_data, default_batch_size, num_eval_batches=None, num_eval_epochs=None):
    """eval_data as the flags ask: unchanged, or that many full batches of its
    batch size (default_batch_size if it has none) from the split repeated."""
    batch = eval_data.batch_size or default_batch_size
    count = num_batches(eval_data.num_examples, batch, num_eval_batches, num_eval_epochs)
    if count is None:
        return eval_data
    # Re-batched from single examples: full batches across the split's end.
    dataset = (eval_data.dataset.unbatch().repeat().batch(batch, drop_remainder=True)
               .take(count))
    return EvalData(dataset, count * batch,
                    f"{eval_data.description}, {count} batches of {batch}", batch)
