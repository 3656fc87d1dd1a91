"""Run by the CUDA-built TensorFlow's Python (a venv of its own: the
`tensorflow` wheel cannot share one with the suite's `tensorflow-cpu`):
prints, as JSON, the TensorFlow version and every GPU and DEFAULT kernel
that wheel registers, with its type constraints and label. Imports nothing
of towertrain."""
import json

import tensorflow as tf
from tensorflow.python.framework import kernels


def main():
    found = {}
    for kernel in kernels.get_all_registered_kernels().kernel:
        if kernel.device_type not in ("GPU", "DEFAULT"):
            continue
        constraints = {c.name: sorted(tf.dtypes.as_dtype(t).name
                                      for t in c.allowed_values.list.type)
                       for c in kernel.constraint}
        found.setdefault(kernel.op, []).append(
            {"device": kernel.device_type, "constraints": constraints, "label": kernel.label})
    print(json.dumps({"tensorflow": tf.__version__, "cuda": tf.test.is_built_with_cuda(),
                      "kernels": found}))


if __name__ == "__main__":
    main()
