"""--stop_at_top_1_accuracy on 2 workers: the eval split is read once by the
cluster (each worker its share of the batches, the counts summed), the stop
is one decision, and both workers stop at that eval's step and exit 0.

The score is checked against an independent computation: the chief's
checkpoint at the stop, exported and run in stock Keras on the test records
decoded with numpy."""
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from towertrain.engine.evaluation import cluster_eval
from towertrain.input_pipeline.base import EvalData
from towertrain.state import export, run_record

from helpers import cifar_files
from helpers import cluster_runs as runs
from helpers.ports import free_ports

# 4 eval batches of 4 (the last of 1): worker 0 scores 2 of them (8 examples),
# worker 1 the other 2 (5).
NUM_TEST = 13
EVAL_LINE = re.compile(r"^Accuracy @ 1 = ([\d.]+) Accuracy @ 5 = ([\d.]+) \(step (\d+)\) "
                       r"images/sec: [\d.]+ \[(\d+) examples, cifar10 test_batch.bin\]$", re.M)


def test_the_workers_shares_are_every_other_batch_of_the_split():
    data = EvalData(tf.data.Dataset.range(NUM_TEST).batch(4), NUM_TEST, "range", 4)
    shares = [[int(x) for batch in cluster_eval.share_of(data, 2, task).dataset
               for x in batch.numpy()] for task in range(2)]
    assert shares == [[0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12]]


@pytest.mark.slow
def test_stop_at_top_1_on_two_workers_is_one_decision_over_the_split_counted_once(tmp_path):
    data_dir = cifar_files.write_dataset(str(tmp_path / "data"), runs.NUM_TRAIN, NUM_TEST)
    train_dir = str(tmp_path / "train")
    hosts = ",".join(f"127.0.0.1:{port}" for port in free_ports(2))
    # Any correct example stops: the first eval with one (the run has 60 steps).
    flags = runs.run_flags(data_dir, train_dir, runs.EPOCHS, *runs.topology(2, 1),
                           "--eval_during_training_every_n_steps=2",
                           "--stop_at_top_1_accuracy=0.01", f"--worker_hosts={hosts}")
    with runs.Processes(str(tmp_path)) as procs:
        for task in range(2):
            procs.start(runs.towertrain(*flags, f"--task_index={task}"), f"task{task}")
        statuses = procs.wait(timeout=300)
        chief, worker = procs.log(0), procs.log(1)
    assert statuses == [0, 0], chief[-2000:] + worker[-2000:]
    evals = [(int(m.group(3)), float(m.group(1)), float(m.group(2)), int(m.group(4)))
             for m in EVAL_LINE.finditer(chief)]
    assert evals, chief
    assert (f"Eval data:   cifar10 test_batch.bin ({NUM_TEST} examples, batches of 4); shared "
            "by 2 workers (batches k, k+2, ... on worker k), the counts summed") in chief
    stop = evals[-1][0]
    # Every eval counted the split's examples once (each worker's share summed);
    # only the last reached the threshold.
    assert [step for step, _, _, _ in evals] == list(range(2, stop + 1, 2))
    assert all(n == NUM_TEST for _, _, _, n in evals)
    assert all(top1 == 0 for _, top1, _, _ in evals[:-1]) and evals[-1][1] > 0
    # One decision: both stopped after that eval's step, the chief saved there.
    assert "Stopping, as eval accuracy at least 0.01 was reached\n" in chief
    assert f"Stopping, as eval accuracy at least 0.01 was reached (step {stop})" in worker
    assert runs.last_step_printed(chief) == stop
    assert runs.checkpoint_steps(train_dir)[-1] == stop
    assert run_record.read(train_dir)["final_step"] == stop

    # Independent: the stop's checkpoint in stock Keras on numpy-decoded records.
    exported = str(tmp_path / "model.keras")
    export.export(train_dir=train_dir, output=exported)
    images, labels = cifar_files.read_test_split(data_dir)
    logits = keras.saving.load_model(exported).predict(images, verbose=0)
    top5 = np.argsort(-logits, axis=1)[:, :5]
    correct1 = int(np.sum(np.argmax(logits, axis=1) == labels))
    correct5 = int(np.sum(np.any(top5 == labels[:, None], axis=1)))
    assert (round(evals[-1][1] * NUM_TEST), round(evals[-1][2] * NUM_TEST)) == (
        correct1, correct5)


class _CountingEvaluator:
    """Scores the ids of its share: an even id is a top-1 hit, an id not a
    multiple of 3 a top-5 hit; worker k measured 100 + 10k images/sec."""

    tower0_only = False

    def __init__(self, task):
        self.task = task

    def tally(self, share):
        from towertrain.engine.evaluation.evaluator import Tally
        ids = [int(x) for batch in share.dataset for x in batch.numpy()]
        return Tally(sum(i % 2 == 0 for i in ids), sum(i % 3 != 0 for i in ids), len(ids),
                     100.0 + 10 * self.task, None)


def test_the_numbers_three_workers_report_are_the_whole_splits(monkeypatch):
    """What each of 3 workers prints after an eval of 13 examples (batches
    of 4: worker 1, the middle one, scores one batch of 4): the split's
    top-1 and top-5 counted once and the cluster's images/sec, the sum of
    the workers', computed here from the ids."""
    from towertrain.engine.evaluation.evaluator import format_result
    data = EvalData(tf.data.Dataset.range(NUM_TEST).batch(4), NUM_TEST, "range", 4)
    vectors = []

    def evaluator(task):
        made = cluster_eval.ClusterEvaluator(_CountingEvaluator(task), 3, task)
        made._sum = made._workers_sum  # eagerly: the collective below reads numbers
        return made

    def own(values, *args, **kwargs):
        vectors.append(values.numpy())
        raise StopIteration  # only this worker's vector was wanted
    monkeypatch.setattr(cluster_eval.private_api, "collective_all_reduce", own)
    for task in range(3):
        with pytest.raises(StopIteration):
            evaluator(task).evaluate(data)
    assert [int(v[2]) for v in vectors] == [5, 4, 4]  # batches 0 and 3, 1, 2
    monkeypatch.setattr(cluster_eval.private_api, "collective_all_reduce",
                        lambda values, *args, **kwargs: tf.constant(np.sum(vectors, axis=0)))
    ids = np.arange(NUM_TEST)
    top1, top5 = np.mean(ids % 2 == 0), np.mean(ids % 3 != 0)
    for task in range(3):
        result = evaluator(task).evaluate(data)
        assert (result.top1, result.top5, result.num_examples) == (top1, top5, NUM_TEST)
        assert result.images_per_sec == 100.0 + 110.0 + 120.0
        assert format_result(result, 6) == (
            f"Accuracy @ 1 = {7 / 13:.4f} Accuracy @ 5 = {8 / 13:.4f} (step 6) "
            "images/sec: 330.0 [13 examples, range]")
