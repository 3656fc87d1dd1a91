"""The run's model and length, declared beside the plan that reads them
(towertrain.plan: the model's defaults, plan/steps.py: warm-up, timed steps,
epochs, accumulation), with their refusals.
"""
import difflib
from typing import Optional

from towertrain.config.declare import COMPARED, NOT_USED, section, setting, tfcnn
from towertrain.models import catalog  # the models' names, without Keras

# NumPy's seed (keras.utils.set_random_seed seeds it) is a 32-bit unsigned integer.
MAX_SEED = 2 ** 32 - 1
# Far above any device's memory; beyond it a batch's element count can overflow
# TensorFlow's int64 before the out-of-memory check can name the flag.
MAX_BATCH_SIZE = 2 ** 31 - 1


@section("Model and data")
class ModelSettings:
    # None, not "trivial", so Trainer(model=<keras model>) can tell an
    # explicit Params(model=...) apart and refuse it (Params.resolved_model).
    model: Optional[str] = setting(
        None, "Model name from the registry (towertrain.models).",
        tfcnn=tfcnn("string", "trivial", "towertrain's registry (python -m towertrain --help "
                    "lists it); --model=alexnet with --data_name=cifar10 builds alexnet_cifar, as "
                    "tf_cnn_benchmarks builds its CIFAR-10 AlexNet there. Not ported: "
                    "overfeat, inception4, resnet50_v2, resnet101_v2, resnet152_v2, "
                    "densenet100_k12, densenet100_k24, the official_resnet* models, ncf, "
                    "deepspeech2 and the TF 1-only mobilenet, nasnet, nasnetlarge and "
                    "ssd300"))
    batch_size: Optional[int] = setting(
        None, "Batch size per device (default: the model's).",
        tfcnn=tfcnn("integer", 0, "default: the model's (tf_cnn_benchmarks: 0 = the model's "
                    "too)", unset=True))
    global_batch_size: Optional[int] = setting(
        None, "Examples per update of the whole cluster, kept when the workers or devices "
        "change: the batch per device is worked out from it (with --batch_size, the "
        "accumulation steps are). Default: --batch_size x devices x workers x "
        "--gradient_accumulation_steps.",
        group="Training", training_only=True, scaling=NOT_USED)
    tf_random_seed: int = setting(
        1234, "Seed for initializers, synthetic data, dropout and augmentation "
        "(every draw: docs/checkpoints.md, 'Randomness and exactness').",
        group="Training", recorded=COMPARED, tfcnn=tfcnn("integer", 1234))

    @staticmethod
    def refuse(p, fail):
        if p.model is not None and p.model not in catalog.registered_names():
            close = difflib.get_close_matches(p.model, catalog.registered_names(), n=1)
            fail("model", p.model, (f"unknown model (did you mean {close[0]}?)" if close else
                                    "unknown model") +
                 f"; known models: {', '.join(catalog.registered_names())}")
        if p.batch_size is not None and p.batch_size < 1:
            fail("batch_size", p.batch_size, "must be >= 1 (it is the batch per device)")
        if p.global_batch_size is not None:
            if p.global_batch_size < 1:
                fail("global_batch_size", p.global_batch_size, "must be >= 1")
            if p.batch_size is not None and p.gradient_accumulation_steps > 1:
                fail("global_batch_size", p.global_batch_size,
                     f"conflicts with --batch_size={p.batch_size} and "
                     f"--gradient_accumulation_steps={p.gradient_accumulation_steps} together, "
                     "which fix it already; drop one of the three")
        if p.batch_size is not None and p.batch_size > MAX_BATCH_SIZE:
            fail("batch_size", p.batch_size, f"must be <= {MAX_BATCH_SIZE} (it is the batch "
                 "per device)")
        if not 0 <= p.tf_random_seed <= MAX_SEED:
            fail("tf_random_seed", p.tf_random_seed, f"must be in 0 .. {MAX_SEED} (the "
                 "seed of NumPy's, Python's and TensorFlow's generators, which Keras sets "
                 "together)")


@section("Training")
class StepSettings:
    num_batches: Optional[int] = setting(
        None, "Number of timed training steps (default: 100; not with "
        "--num_epochs).",
        training_only=True, tfcnn=tfcnn("integer", None),
        forward_only=True)
    num_warmup_batches: int = setting(
        10, "Untimed steps before the timed ones.",
        training_only=True, tfcnn=tfcnn("integer", None, "default 10"),
        forward_only=True)
    num_epochs: Optional[int] = setting(
        None, "Train this many passes over --data_dir (on synthetic data, over the "
        "dataset's known size) instead of --num_batches steps.",
        training_only=True, scaling=NOT_USED,
        tfcnn=tfcnn("float", None, "whole epochs; --num_batches runs part of one"),
        forward_only=True)
    gradient_accumulation_steps: int = setting(
        1, "Sum the gradients of this many consecutive global batches on each "
        "device, then exchange and apply one update of their mean; a step is "
        "one update.",
        training_only=True)

    @staticmethod
    def refuse(p, fail):
        if p.num_batches is not None and p.num_batches < 1:
            fail("num_batches", p.num_batches, "must be >= 1")
        if p.num_warmup_batches < 0:
            fail("num_warmup_batches", p.num_warmup_batches, "must be >= 0")
        if p.num_epochs is not None and p.num_epochs < 1:
            fail("num_epochs", p.num_epochs, "must be >= 1")
        if p.num_batches is not None and p.num_epochs is not None:
            fail("num_batches", p.num_batches, f"conflicts with --num_epochs={p.num_epochs}, "
                 "which sets the number of steps; drop one")
        steps = p.gradient_accumulation_steps
        if steps < 1:
            fail("gradient_accumulation_steps", steps, "must be >= 1 (1: no accumulation)")
        if steps > 1 and p.variable_update == "independent":
            fail("gradient_accumulation_steps", steps, "conflicts with "
                 "--variable_update=independent: towers there update on their own and "
                 "exchange nothing; use replicated or parameter_server, or drop the flag")
