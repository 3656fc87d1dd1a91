"""Eval during training on several workers: the split read once, one score.

Worker k of W scores batches k, k + W, k + 2W, ... of the eval split (every
worker's split has the same batches: the eval input is deterministic), and
the counts (top-1, top-5, examples) and each worker's images/sec are summed
over the workers in one collective all-reduce on every worker's /cpu:0. So
the split costs each worker 1/W of it, every worker gets the same integers,
and --stop_at_top_1_accuracy is one decision, taken at the same step by
every worker: the chief saves there and all of them return (exit status 0).
The sum of the examples must be the split's size: each counted once.

The collective has a group key of its own (one /cpu:0 per worker), clear of
the training step's (collective_all_reduce's keys start at 2, 3, 4 and 1000):
its instance key then cannot meet a key the step fixed for another shape.
Like the step's collectives it carries no timeout; a worker that dies is the
peer watch's to report.
"""
import tensorflow as tf

from towertrain import private_api
from towertrain.input_pipeline.base import EvalData

from .evaluator import Tally, result_of

EVAL_GROUP = 5
EVAL_INSTANCE = 1


def share_of(eval_data, num_workers, task_index):
    """Worker `task_index`'s batches of eval_data (every num_workers-th)."""
    return EvalData(eval_data.dataset.shard(num_workers, task_index), None,
                    eval_data.description, eval_data.batch_size)


class ClusterEvaluator:
    """An Evaluator's (towertrain.engine.evaluation.evaluator) evaluate over
    `num_workers` processes, this one task `task_index`: the same EvalResult
    on every worker."""

    def __init__(self, evaluator, num_workers, task_index):
        self.evaluator = evaluator
        self.num_workers, self.task_index = num_workers, task_index
        self._sum = tf.function(self._workers_sum, autograph=False)

    @property
    def tower0_only(self):
        return self.evaluator.tower0_only

    def _workers_sum(self, values):
        with tf.device("/cpu:0"):
            return private_api.collective_all_reduce(
                values, self.num_workers, EVAL_GROUP, EVAL_INSTANCE,
                communication_hint="ring")

    def evaluate(self, eval_data):
        mine = self.evaluator.tally(share_of(eval_data, self.num_workers, self.task_index))
        # float64: the counts stay exact integers far past any split's size.
        total = self._sum(tf.constant([mine.correct1, mine.correct5, mine.count,
                                       mine.images_per_sec], tf.float64)).numpy()
        correct1, correct5, count = (int(round(v)) for v in total[:3])
        return result_of(eval_data, Tally(correct1, correct5, count, float(total[3]), None))


def evaluator_for(evaluator, topology):
    """`evaluator` as the run's topology (towertrain.plan.sections.Topology)
    needs it: shared over the workers of a multi-worker run."""
    if topology.num_workers == 1:
        return evaluator
    return ClusterEvaluator(evaluator, topology.num_workers, topology.cluster.task_index)
