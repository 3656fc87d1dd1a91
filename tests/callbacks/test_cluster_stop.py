"""ClusterStop's decisions without processes: the agreed stop step (after the
staged batches, a fence for every worker) and the second signal exiting at
once. The whole behaviour across processes: tests/cluster/test_coordinated_stop.py."""
import signal
import types

from towertrain.callbacks import cluster_stop
from towertrain.engine.run.loop import Loop


class _Handles:
    """What the trainer hands ClusterStop and the loop (RunHandles)."""

    def __init__(self):
        self.fences, self.assigned = [], []
        self.stop_request = types.SimpleNamespace(assign=self.assigned.append)
        self.staging_depth = 0  # not staged: nothing to drain

    def global_step(self):
        return 0

    def add_fence(self, step):
        self.fences.append(step)


def _result(stop_requests):
    return types.SimpleNamespace(extras={"stop_requests": stop_requests})


def test_a_signal_is_sent_once_and_every_worker_stops_at_the_step_it_arrived():
    trainer = _Handles()
    lines = []
    stop = cluster_stop.ClusterStop(trainer, write=lines.append)
    loop = Loop(trainer, [stop], total_steps=100)
    stop.loop = loop  # before_train would also install the handlers
    stop.before_step(5)
    assert trainer.assigned == []
    stop.received = "SIGTERM"  # what the handler records
    stop.before_step(6)
    stop.before_step(7)
    assert trainer.assigned == [1]  # once, read by the next step's collective
    stop.after_step(6, _result(0), 0.1)
    assert loop.stop_reason is None
    stop.after_step(7, _result(1), 0.1)
    assert (stop.stop_at, trainer.fences, loop.stop_reason) == (7, [7], "SIGTERM")
    loop.step = 7
    stop.after_train()
    assert lines == ["Stopped at step 7 with every worker (SIGTERM; no --train_dir, "
                     "nothing saved)"]


def test_another_workers_request_stops_after_the_staged_batches():
    trainer = _Handles()
    trainer.staging_depth = 2
    stop = cluster_stop.ClusterStop(trainer, write=print)
    stop.loop = loop = Loop(trainer, [stop], total_steps=100)
    stop.after_step(10, _result(1), 0.1)
    assert (stop.stop_at, trainer.fences, loop.stop_reason) == (12, [12], None)
    stop.after_step(11, _result(0), 0.1)
    assert loop.stop_reason is None
    stop.after_step(12, _result(0), 0.1)
    assert loop.stop_reason == cluster_stop.OTHER_WORKER


def test_a_second_signal_exits_at_once(monkeypatch):
    exits = []
    monkeypatch.setattr(cluster_stop.os, "_exit", exits.append)
    stop = cluster_stop.ClusterStop(_Handles())
    stop.loop = Loop(_Handles(), [stop], total_steps=100)
    stop._handle(signal.SIGTERM, None)
    assert (stop.received, exits) == ("SIGTERM", [])
    stop._handle(signal.SIGINT, None)
    assert exits == [128 + signal.SIGINT]


def test_sigusr1_stops_every_worker_right_after_the_next_periodic_checkpoint():
    """The elastic launch's take-back: asked in step 26 with one batch staged,
    saves every 10 steps: the workers stop at 30, where the chief saves."""
    trainer = _Handles()
    trainer.staging_depth = 1
    stop = cluster_stop.ClusterStop(trainer, write=print, save_steps=10)
    stop.loop = loop = Loop(trainer, [stop], total_steps=100)
    stop._handle_at_checkpoint(signal.SIGUSR1, None)
    stop.before_step(26)
    assert trainer.assigned == [cluster_stop.AT_CHECKPOINT]
    stop.after_step(26, _result(cluster_stop.AT_CHECKPOINT), 0.1)
    assert (stop.stop_at, trainer.fences, loop.stop_reason) == (30, [30], None)
    stop.after_step(29, _result(cluster_stop.AT_CHECKPOINT), 0.1)
    assert loop.stop_reason is None
    stop.after_step(30, _result(cluster_stop.AT_CHECKPOINT), 0.1)
    assert loop.stop_reason == "SIGUSR1, a stop at the next checkpoint"


def test_a_checkpoint_stop_comes_after_the_staged_batches_and_gives_way_to_a_stop_now():
    trainer = _Handles()
    trainer.staging_depth = 2
    stop = cluster_stop.ClusterStop(trainer, write=print, save_steps=10)
    stop.loop = loop = Loop(trainer, [stop], total_steps=35)
    # Another worker asked in step 29: batches are staged up to 31, so 40,
    # which the run's end (35) comes first.
    stop.after_step(29, _result(cluster_stop.AT_CHECKPOINT), 0.1)
    assert (stop.stop_at, trainer.fences) == (35, [35])
    stop.received = "SIGTERM"
    stop.before_step(30)
    assert trainer.assigned == [1]
    stop.after_step(30, _result(cluster_stop.AT_CHECKPOINT + 1), 0.1)
    assert (stop.stop_at, trainer.fences) == (32, [35, 32])
    stop.after_step(32, _result(cluster_stop.AT_CHECKPOINT + 1), 0.1)
    assert loop.stop_reason == "SIGTERM"


def test_sigusr1_without_periodic_checkpoints_stops_at_the_same_step_as_sigterm(capsys):
    trainer = _Handles()
    stop = cluster_stop.ClusterStop(trainer, write=print)
    stop.loop = Loop(trainer, [stop], total_steps=100)
    stop._handle_at_checkpoint(signal.SIGUSR1, None)
    stop.before_step(5)
    assert (stop.received, stop.at_checkpoint, trainer.assigned) == ("SIGUSR1", None, [1])
    assert capsys.readouterr().err.startswith(
        "towertrain: received SIGUSR1: no --save_model_steps, so no periodic checkpoint to "
        "stop at; stopping now instead\n")
