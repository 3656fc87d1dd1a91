"""tf_cnn_benchmarks command lines that mean something particular there:
its "unset" defaults spelled out (--batch_size=0, --save_model_secs=0,
--gpu_indices=, ...) mean what leaving the flag out means,
--save_summaries_steps=0 means no summaries, and --model=alexnet with
--data_name=cifar10 is its CIFAR-10 AlexNet."""
import re

import pytest

from towertrain.config import settings, tfcnn_checks, tfcnn_flags
import helpers.cli

SPELLED_OUT = [f"--{name}={'' if value == '' else value}"
               for name, value in tfcnn_checks.unset_spellings().items()]
BASE = ("--model=trivial", "--device=cpu", "--num_gpus=2", "--num_batches=2",
        "--num_warmup_batches=0", "--display_every=1")


@pytest.fixture
def params_of():
    from absl import flags
    from towertrain.commands import train
    from towertrain.config import flags as flags_lib
    flags_lib.define_flags()

    def parse(*args):
        flags.FLAGS.unparse_flags()
        train.parse_flags(["towertrain", *args])
        return flags_lib.params_from_flags()
    yield parse
    flags.FLAGS.unparse_flags()


def test_each_listed_flag_is_unset_here_and_set_there():
    defaults = {s.name: s.default for s in settings.SETTINGS}
    for name in tfcnn_flags.UNSET_DEFAULTS:
        flag = tfcnn_flags.BY_NAME[name]
        assert flag.category == tfcnn_flags.IMPLEMENTED, name
        assert defaults[name] is None, name  # towertrain's unset
        assert flag.default in (0, "", []), name  # tf_cnn_benchmarks' unset


@pytest.mark.parametrize("arg", SPELLED_OUT)
def test_a_spelled_out_unset_default_is_as_if_not_given(params_of, arg):
    assert params_of(*BASE, arg) == params_of(*BASE)


def test_the_set_values_still_count(params_of):
    p = params_of(*BASE, "--batch_size=3", "--save_model_secs=5", "--train_dir=/tmp/x")
    assert (p.batch_size, p.save_model_secs) == (3, 5.0)


def test_a_tf_cnn_line_spelling_out_its_defaults_runs_like_one_without_them():
    """Through the CLI: the same header and the same losses."""
    plain = helpers.cli.run_cli(*BASE, check=True).stdout
    spelled = helpers.cli.run_cli(*BASE, *SPELLED_OUT, "--save_summaries_steps=0",
                                  check=True).stdout

    def untimed(text):  # step lines keep their step and loss; the total goes
        return [re.sub(r"\timages/sec: [^\t]*\t", "\t", line).rsplit("\twait", 1)[0]
                for line in text.splitlines() if "total images/sec" not in line]
    assert "Batch size:" in plain
    assert [line.split("\t") for line in untimed(plain) if line[:2] in ("1\t", "2\t")] == [
        [step, loss] for step, loss in re.findall(r"^(\d)\timages/sec: [^\t]*\t([\d.]+)",
                                                  plain, re.M)]
    assert untimed(spelled) == untimed(plain)


def test_save_summaries_steps_0_turns_summaries_off_and_conflicts_with_asking_for_them(
        params_of, tmp_path):
    assert params_of(*BASE, "--save_summaries_steps=0").save_summaries_steps == 0
    with pytest.raises(Exception, match=r"^--summary_verbosity=1: asks for summaries, but "
                       r"--save_summaries_steps=0 turns them off; drop one$"):
        params_of(*BASE, "--save_summaries_steps=0", "--summary_verbosity=1",
                  f"--train_dir={tmp_path}")
    with pytest.raises(Exception, match=r"^--save_summaries_steps=-1: must be >= 1, or 0 "
                       r"for no summaries"):
        params_of(*BASE, "--save_summaries_steps=-1")


def test_alexnet_on_cifar10_is_the_cifar10_alexnet_as_in_tf_cnn_benchmarks(params_of):
    assert params_of("--model=alexnet", "--data_name=cifar10").model == "alexnet_cifar"
    assert params_of("--model=alexnet").model == "alexnet"  # ImageNet's, 227x227
    assert params_of("--model=alexnet", "--data_name=imagenet").model == "alexnet"


def test_the_cli_builds_and_names_the_cifar10_alexnet():
    done = helpers.cli.run_cli("--model=alexnet", "--data_name=cifar10", "--device=cpu",
                               "--batch_size=2", "--num_batches=1", "--num_warmup_batches=0",
                               check=True)
    assert re.search(r"^Model: +alexnet_cifar$", done.stdout, re.M), done.stdout
