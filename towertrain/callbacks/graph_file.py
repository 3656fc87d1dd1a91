"""--graph_file: the training step's graph, written before the first step.

tf_cnn_benchmarks wrote its TF1 graph (`as_graph_def(add_shapes=True)`); here
the graph is the step's tf.function, traced as the loop runs it: every
tower, the exchange and the update. Text format when the name ends in 'txt'.
"""
import os

import tensorflow as tf

from .base import Callback


class GraphFile(Callback):
    """trace_step: returns the step's concrete function (RunHandles.trace_step)."""

    def __init__(self, trace_step, path, write=print):
        self.trace_step = trace_step
        self.path = path
        self.write = write

    def before_train(self, loop):
        super().before_train(loop)
        as_text = self.path.endswith("txt")
        graph_def = self.trace_step().graph.as_graph_def(add_shapes=True)
        directory, name = os.path.split(os.path.abspath(self.path))
        self.write(f"Writing GraphDef as {'text' if as_text else 'binary'} to {self.path}")
        tf.io.write_graph(graph_def, directory, name, as_text=as_text)
