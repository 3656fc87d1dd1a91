"""--profile_steps=A,B: a TensorBoard profile of global steps A to B.

tf.profiler.experimental.start(logdir) before step A, stop() after step B
(or at the end of the run, if it ends first). The profile lands in
<logdir>/plugins/profile/<date>/<host>.xplane.pb, where TensorBoard's profile
plugin (pip install tensorboard-plugin-profile) finds it next to the event
files. A resumed run profiles the part of A..B it trains.
"""
import glob
import os

import tensorflow as tf

from .base import Callback


class ProfileSteps(Callback):
    """Profiles global steps `first`..`last` into `logdir`."""

    def __init__(self, first, last, logdir, write=print):
        self.first = first
        self.last = last
        self.logdir = logdir
        self.write = write
        self._start = None  # the step this run starts profiling at
        self.active = False

    def header_info(self):
        return [("Profile", f"steps {self.first}..{self.last} -> "
                            f"{os.path.join(self.logdir, 'plugins', 'profile')}")]

    def before_train(self, loop):
        super().before_train(loop)
        first = max(self.first, loop.start_step + 1)
        if first > min(self.last, loop.total_steps):
            self.write(f"--profile_steps={self.first},{self.last}: not among this run's "
                       f"steps ({loop.start_step + 1}..{loop.total_steps}); no profile")
            return
        self._start = first

    def before_step(self, step):
        if step != self._start:
            return
        try:
            tf.profiler.experimental.start(self.logdir)
        except tf.errors.AlreadyExistsError:  # --trace_file is tracing this step
            self.write(f"--profile_steps: step {step} is being traced for --trace_file "
                       "(one profiler at a time); no profile")
            return
        self.active = True

    def after_step(self, step, result, seconds):
        if self.active and step >= self.last:
            self._stop(step)

    def after_train(self):
        if self.active:
            self._stop(self.loop.step)

    def _stop(self, step):
        tf.profiler.experimental.stop()
        self.active = False
        found = glob.glob(os.path.join(self.logdir, "plugins", "profile", "*"))
        where = max(found, key=os.path.getmtime) if found else self.logdir
        self.write(f"Profiled steps {self._start}..{step} into {where}")

    def close(self):
        if self.active:  # a step failed while profiling: end the profiler's session
            tf.profiler.experimental.stop()
            self.active = False
