"""A towertrain worker that writes down each example its input decodes, for
the elastic launch's test (`python -m towertrain.launch
--module=helpers.counting_worker -- <flags>`).

Every call of the CIFAR training preprocessing appends its example's seed
pair (epoch key, position in the epoch) to $COUNTING_DIR/<pid>.txt, a line
each, as it happens: a worker killed outright keeps what it decoded. What a
worker decoded includes what it read ahead of its last step; the test takes
only the steps each start of the workers trained."""
import os
import threading

import numpy as np
import tensorflow as tf

from towertrain.commands import train
from towertrain.input_pipeline import preprocessing


def _recording(real, out):
    lock = threading.Lock()

    def record(seed):
        with lock:
            out.write(" ".join(str(int(v)) for v in seed) + "\n")
        return np.int32(0)

    def wrapper(image, seed, *args, **kwargs):
        tick = tf.numpy_function(record, [seed], tf.int32)
        with tf.control_dependencies([tick]):
            return tf.identity(real(image, seed, *args, **kwargs))
    return wrapper


if __name__ == "__main__":
    path = os.path.join(os.environ["COUNTING_DIR"], f"{os.getpid()}.txt")
    preprocessing.cifar_train = _recording(preprocessing.cifar_train,
                                           open(path, "a", buffering=1))
    train.run()
