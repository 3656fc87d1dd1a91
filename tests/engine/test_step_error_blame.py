"""A step's error is blamed on the input data only when it comes from the
input pipeline: a kernel's error (TensorFlow's CPU float16
convolution gradients support only NHWC) was reported as "bad input data in
--data_dir". That case is refused before any step; an error of the towers is
raised as TensorFlow's, one of the reader still names the data."""
import pytest
import tensorflow as tf

from towertrain import Params, Trainer
from towertrain.errors import InputError

from helpers import refusals
from helpers.cifar_files import write_dataset

KERNEL_ERROR = ("Graph execution error:\n\nDetected at node gradient_tape/Conv2DBackpropInput "
                "...\nConv2DCustomBackpropInputOp only supports NHWC.\n\t [[{{node "
                "gradient_tape/Conv2DBackpropInput}}]] [Op:__inference_step_30]")
READER_ERROR = ("Graph execution error:\n\nDetected at node DecodeJpeg ...\nError in "
                "user-defined function passed to MapDataset:1 transformation with iterator: "
                "Iterator::Root::Prefetch::ParallelMapV2: Unknown image file format.\n\t "
                "[[{{node DecodeJpeg}}]]\n\t [[IteratorGetNext]] [Op:__inference_step_19]")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return write_dataset(str(tmp_path_factory.mktemp("cifar")), num_train=8, num_test=4)


def _step_failing_with(data_dir, message):
    trainer = Trainer(Params(model="trivial", device="cpu", batch_size=4, num_batches=1,
                             num_warmup_batches=0, data_dir=data_dir, staging_depth=0))

    def fail(*args):
        raise tf.errors.InvalidArgumentError(None, None, message)
    trainer._step_fn = fail
    try:
        trainer.step()
    finally:
        trainer.close()


def test_a_kernels_error_in_a_step_is_not_blamed_on_the_data(data_dir):
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        _step_failing_with(data_dir, KERNEL_ERROR)
    assert not isinstance(raised.value, InputError)
    assert raised.value.message == KERNEL_ERROR


def test_an_input_pipeline_error_in_a_step_names_the_data(data_dir):
    with pytest.raises(InputError) as raised:
        _step_failing_with(data_dir, READER_ERROR)
    # One line: TensorFlow's 'Graph execution error' page is cut to its reason.
    assert str(raised.value) == (f"bad input data in --data_dir={data_dir}: Unknown image "
                                 "file format.")
    assert READER_ERROR in str(raised.value.__cause__)  # the whole page stays chained


def test_cpu_float16_nchw_is_refused_before_any_step(data_dir, capsys):
    status, err = refusals.run_cli(
        ["--model=trivial", "--device=cpu", "--data_format=NCHW", "--use_fp16",
         "--allow_emulated_precision", "--num_batches=1", f"--data_dir={data_dir}"], capsys)
    assert status == 2
    assert err == (
        "towertrain: error: --data_format=NCHW with --use_fp16 on --device=cpu: TensorFlow's "
        "CPU float16 convolution gradients support only NHWC (Conv2DCustomBackpropInputOp "
        "only supports NHWC), so the first step would fail; use --data_format=NHWC (the CPU "
        "default) or drop --use_fp16\n")
