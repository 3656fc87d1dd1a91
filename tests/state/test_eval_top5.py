"""Eval's printed top-1 and top-5 equal an independent numpy count over the
logits of the exported model (stock Keras, loaded without towertrain)."""
import re

import keras
import numpy as np

from towertrain import Trainer
from helpers.tiny_models import NUM_EVAL, eval_data, tiny_params


def numpy_top_k(logits, labels, k):
    """Share of examples whose label is among the k largest logits."""
    own = logits[np.arange(len(labels)), labels]
    rank = (logits > own[:, None]).sum(axis=1)  # how many logits beat the label's
    return float(np.mean(rank < k))


def test_printed_top1_and_top5_equal_numpy_on_the_exported_model(tmp_path):
    # Untrained weights score as well as trained ones here: the claim is the count.
    trainer = Trainer(tiny_params("replicated", gpus=2))
    lines = []
    result = trainer.evaluate(eval_data("NHWC"), write=lines.append)
    exported = trainer.export(str(tmp_path / "tiny.keras"))
    del exported
    model = keras.saving.load_model(str(tmp_path / "tiny.keras"))  # stock Keras
    images = np.concatenate([x.numpy() for x, _ in eval_data("NHWC").dataset])
    labels = np.concatenate([y.numpy() for _, y in eval_data("NHWC").dataset])
    logits = np.asarray(model(images, training=False))
    top1, top5 = numpy_top_k(logits, labels, 1), numpy_top_k(logits, labels, 5)
    assert top5 > top1, (top1, top5)  # the data tells the two apart
    printed = re.match(r"Accuracy @ 1 = ([\d.]+) Accuracy @ 5 = ([\d.]+) ", lines[0])
    assert printed, lines
    assert float(printed.group(1)) == round(top1, 4)
    assert float(printed.group(2)) == round(top5, 4)
    assert (result.top1, result.top5, result.num_examples) == (top1, top5, NUM_EVAL)
