"""Tracing a step's towers in lockstep, so layers can combine values across
towers while the graph is being built (synchronized batch norm).

A tower's forward pass is a plain Python call of the Keras model, so tower 1
cannot start a layer before tower 0 has returned from the whole model. To let
every tower's batch-norm layer see the statistics of all towers, each tower is
traced in its own thread under the step's graph, one thread at a time: a tower
runs until it reaches a cross-tower point (`all_sum`) or its end, then hands
over to the next. When the last tower reaches a point, the sum is built once
and every tower continues with that same tensor. Taking turns keeps graph
construction single-threaded and in a fixed order, so the traced graph is the
same on every trace.

Only the forward pass is traced this way; the caller differentiates the sum of
the towers' losses afterwards (tf.gradients), so the gradient of each tower's
contribution to the shared statistics reaches its own variables.

Across workers (`across`), each point's sum over this worker's towers is then
summed over the workers (the variable manager's collective: local sum first,
one member per worker), and its gradient likewise on the way back.
"""
import threading

import tensorflow as tf
from towertrain.errors import TowerMismatchError  # noqa: F401 - raised here

_thread = threading.local()



class Member:
    """A tower's handle on its lockstep group, for the layers it calls."""

    def __init__(self, group, position):
        self.group = group
        self.position = position
        # 0.0 where the tower's slice is empty at run time and its forward
        # pass runs on a stand-in example: the layers weigh their share by it.
        self.present = None

    def all_sum(self, tensors):
        """Element-wise sums of `tensors` over every tower of the step."""
        return self.group.all_sum(self.position, tensors)


def current():
    """The calling thread's Member while a Lockstep traces its tower, else None."""
    return getattr(_thread, "member", None)


class Lockstep:
    """Traces tower functions in turn-taking threads; see the module docstring.

    reduce_device: where the sums are built (tower 0's device: every tower
    reads the one result, so all towers normalize with identical bits).
    across(tensors, point, device): this worker's sums of cross-tower point
    `point` (0, 1, ...) summed over every worker, or None in one process.
    """

    def __init__(self, num_towers, reduce_device, across=None):
        self.num_towers = num_towers
        self.reduce_device = reduce_device
        self.across = across
        self._cond = threading.Condition()
        self._turn = 0
        self._parts = [None] * num_towers
        self._result = None
        self._points = 0  # cross-tower points completed so far
        self._finished = [False] * num_towers
        self._error = None

    def run(self, tower_fns):
        """Calls tower_fns[i]() for every tower under the caller's graph; returns
        their results in tower order, or raises the first tower's error."""
        if len(tower_fns) != self.num_towers:
            raise ValueError(f"{len(tower_fns)} tower functions for {self.num_towers} towers")
        graph = tf.compat.v1.get_default_graph()
        results = [None] * self.num_towers

        def trace(position):
            try:
                self._wait_for_turn(position)
                _thread.member = Member(self, position)
                with graph.as_default():
                    results[position] = tower_fns[position]()
            except BaseException as error:  # noqa: BLE001 - handed to the caller
                self._fail(error)
            finally:
                _thread.member = None
                self._finish(position)

        threads = [threading.Thread(target=trace, args=(i,), name=f"tower_{i}_trace",
                                    daemon=True) for i in range(self.num_towers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if self._error is not None:
            raise self._error
        return results

    def all_sum(self, position, tensors):
        with self._cond:
            self._check_error()
            finished = [i for i, done in enumerate(self._finished) if done]
            if finished:
                self._fail_locked(TowerMismatchError(
                    f"tower {position} reached cross-tower point {self._points + 1} "
                    f"after tower {finished[0]} had finished: the towers must run the "
                    "same layers (a model whose layers depend on the batch contents?)"))
                self._check_error()
            self._parts[position] = list(tensors)
            if position == self.num_towers - 1:
                widths = {len(part) for part in self._parts}
                if len(widths) != 1:
                    self._fail_locked(TowerMismatchError(
                        f"cross-tower point {self._points + 1}: towers passed "
                        f"{[len(p) for p in self._parts]} tensors"))
                    self._check_error()
                with tf.device(self.reduce_device), tf.name_scope("cross_tower_sum"):
                    self._result = [tf.add_n(list(values)) for values in zip(*self._parts)]
                    if self.across is not None:
                        self._result = self.across(self._result, self._points,
                                                   self.reduce_device)
                self._parts = [None] * self.num_towers
                self._points += 1
            self._pass_turn(position)
            self._cond.wait_for(lambda: self._turn == position or self._error is not None)
            self._check_error()
            return list(self._result)

    def _wait_for_turn(self, position):
        with self._cond:
            self._cond.wait_for(lambda: self._turn == position or self._error is not None)
            self._check_error()

    def _pass_turn(self, position):
        self._turn = (position + 1) % self.num_towers
        self._cond.notify_all()

    def _finish(self, position):
        with self._cond:
            self._finished[position] = True
            waiting = [i for i, part in enumerate(self._parts) if part is not None]
            if waiting and self._error is None:
                self._fail_locked(TowerMismatchError(
                    f"tower {position} finished while tower {waiting[0]} waits at "
                    f"cross-tower point {self._points + 1}: the towers must run the same "
                    "layers"))
            if position < self.num_towers - 1:
                self._pass_turn(position)
            self._cond.notify_all()

    def _fail(self, error):
        with self._cond:
            self._fail_locked(error)

    def _fail_locked(self, error):
        if self._error is None:
            self._error = error
        self._cond.notify_all()

    def _check_error(self):
        if self._error is not None:
            raise _Aborted()


class _Aborted(Exception):
    """Raised in a tower's thread when another tower failed (not reported)."""


