"""--input=queue: a tf.queue.FIFOQueue of global batches filled by Python threads.

For data that tf.data cannot express (a Python library decodes it, a network
source, ...). Background threads pull global batches from one shared Python
iterator and enqueue them; the step dequeues one on the CPU and slices it.
A feeder that fails closes the queue and its exception is re-raised to the
trainer (never a hang on an empty queue).
"""
import itertools
import threading

import numpy as np
import tensorflow as tf

from . import cifar10
from .arrays import InputError
from .base import Input
from .slicing import split_to_devices


def batches_of(example_iter, global_batch):
    """Groups (image, label) examples into global batches; the last may be partial."""
    images, labels = [], []
    for image, label in example_iter:
        images.append(image)
        labels.append(label)
        if len(images) == global_batch:
            yield np.stack(images), np.asarray(labels, np.int32)
            images, labels = [], []
    if images:
        yield np.stack(images), np.asarray(labels, np.int32)


class QueueInput(Input):
    """source_fn(epoch) -> iterator of (image HWC-or-model-layout, label) examples.

    Each epoch ends with its partial batch, so the batch dimension is left
    open; num_epochs bounds the stream, None calls the source again forever.
    eval_fn(batch_size) -> EvalData gives the eval split where there is one.
    """

    name = "queue"
    # How long close() waits for each feeder thread to notice the closed queue.
    JOIN_TIMEOUT_SECS = 10

    def __init__(self, source_fn, image_shape, global_batch, num_examples=None,
                 num_epochs=None, num_threads=2, capacity=4, description=None,
                 eval_fn=None):
        self._eval_fn = eval_fn
        self.source_fn = source_fn
        self.image_shape = tuple(image_shape)
        self.global_batch = global_batch
        self.num_examples = num_examples
        self.num_epochs = num_epochs
        self.num_threads = num_threads
        self.capacity = capacity
        self.description = description
        self.error = None
        self._queue = None
        self._threads = []
        self._lock = threading.Lock()
        self._batches = None
        self._started_after = None
        self._finished = 0
        self._closing = False

    def _all_batches(self, skip=0):
        """The batch sequence from batch `skip` on (0-based). Whole epochs are
        skipped without reading them when the epoch length is known."""
        epoch = 0
        if self.steps_per_epoch:
            epoch, skip = divmod(skip, self.steps_per_epoch)
        while self.num_epochs is None or epoch < self.num_epochs:
            batches = batches_of(self.source_fn(epoch), self.global_batch)
            yield from itertools.islice(batches, skip, None)
            skip = 0
            epoch += 1

    def create(self, devices):
        """Creates the queue; the feeders start with the run (resume_after),
        so a resumed run's first batch is the one after its checkpoint's step."""
        del devices
        with tf.device("/cpu:0"):
            # Every epoch ends with a partial batch, so the batch dimension is open;
            # FIFOQueue takes fully defined shapes or none, so they are set on dequeue.
            self._shapes = [(None,) + self.image_shape, (None,)]
            self._queue = tf.queue.FIFOQueue(self.capacity, [tf.float32, tf.int32])

    def resume_after(self, step):
        """Starts the feeders at batch `step` (0-based) of the sequence: every
        global step trains on one batch, so a run resumed after global step
        `step` continues exactly where the interrupted one stopped."""
        if self._batches is not None:
            if step != self._started_after:
                raise RuntimeError(f"queue input already started after step "
                                   f"{self._started_after}; cannot restart after {step}")
            return
        self._started_after = step
        self._batches = self._all_batches(skip=step)
        for i in range(self.num_threads):
            thread = threading.Thread(target=self._feed, name=f"towertrain_feeder_{i}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def _feed(self):
        try:
            while not self._closing:
                # One shared iterator, and the enqueue inside the lock: every
                # batch enters the queue exactly once and in sequence order, so
                # the step that trains on it does not depend on thread timing.
                with self._lock:
                    batch = next(self._batches, None)
                    if batch is None:
                        break
                    images, labels = batch
                    with tf.device("/cpu:0"):
                        self._queue.enqueue([images.astype(np.float32), labels])
        except tf.errors.CancelledError:
            return  # closed on exit
        except Exception as err:  # noqa: BLE001 - reported to the trainer below
            if self._closing:  # an enqueue racing close(): not a data error
                return
            self.error = err
            self._queue.close(cancel_pending_enqueues=True)
            return
        with self._lock:
            self._finished += 1
            if self._finished == self.num_threads:
                self._queue.close()  # the last feeder done: dequeues past the end fail

    def tower_batches(self, devices):
        with tf.device("/cpu:0"):
            images, labels = self._queue.dequeue()
            images.set_shape(self._shapes[0])
            labels.set_shape(self._shapes[1])
        return split_to_devices((images, labels), devices)

    def raise_pending_error(self):
        """Re-raises a feeder thread's failure as an InputError (trainer hook)."""
        if self.error is not None:
            where = self.description or "the queue input"
            raise InputError(f"{where}: feeder thread failed: {self.error}") from self.error

    def eval_data(self, batch_size):
        if self._eval_fn is None:
            return super().eval_data(batch_size)
        return self._eval_fn(batch_size)

    def close(self):
        """Closes the queue (a blocked enqueue is cancelled) and joins the feeders."""
        self._closing = True
        if self._queue is not None:
            self._queue.close(cancel_pending_enqueues=True)
        for thread in self._threads:
            thread.join(self.JOIN_TIMEOUT_SECS)
        alive = [t.name for t in self._threads if t.is_alive()]
        self._threads = []
        if alive:
            raise RuntimeError(f"queue feeder threads did not stop: {', '.join(alive)}")


def _cifar_augment(image, rng, distortions=True):
    """numpy version of the tf.data CIFAR training augmentation (HWC uint8 in);
    distortions=False: standardization only."""
    if distortions:
        padded = np.pad(image, ((4, 4), (4, 4), (0, 0)))
        top, left = rng.randint(0, 9, size=2)
        image = padded[top:top + 32, left:left + 32]
        if rng.rand() < 0.5:
            image = image[:, ::-1]
    image = image.astype(np.float32)
    std = max(image.std(), 1.0 / np.sqrt(image.size))
    return (image - image.mean()) / std


def from_data_dir(name, data_dir, image_shape, global_batch, num_epochs=None, seed=0,
                  data_format="NHWC", distortions=True):
    """The queue input for --data_name: cifar10 decoded and augmented in numpy."""
    if name != "cifar10":
        raise InputError(f"--input=queue: only --data_name=cifar10 is fed by the queue "
                         f"input; use --input=dataset for {name}")
    images, labels = cifar10.read_examples(data_dir, train=True)

    def source(epoch):
        rng = np.random.RandomState([seed, epoch])
        for index in rng.permutation(len(images)):
            image = _cifar_augment(images[index], rng, distortions)
            if data_format == "NCHW":
                image = image.transpose(2, 0, 1)
            yield image, labels[index]

    def eval_fn(batch_size):  # the test split, read in file order by tf.data
        return cifar10.eval_data(data_dir, batch_size, data_format)

    return QueueInput(source, image_shape, global_batch, num_examples=len(images),
                      num_epochs=num_epochs, description=f"--data_dir={data_dir}",
                      eval_fn=eval_fn)
