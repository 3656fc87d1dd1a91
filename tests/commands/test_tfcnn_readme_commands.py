"""tf_cnn_benchmarks' own README commands (scripts/tf_cnn_benchmarks/README.md
at towertrain.config.tfcnn_flags.SOURCE_COMMIT), copied verbatim apart from
the script name, run through `python -m towertrain`'s parser.

Running them is opt-in (TOWERTRAIN_README_RUNS=1): both train ResNet-50 at
ImageNet size, which a CPU does at well under 10 images/sec (measured 0.24 on
the loaded 2-core AMD EPYC these tests run on), so the first command's 110
steps x 32 images take hours, and the second's 8 towers x 256 images do not
fit in memory. A GPU machine runs them in minutes.
"""
import os
import re
import shlex

import pytest

from towertrain.config import tfcnn_flags
import helpers.cli
from helpers.data_files import imagenet_dir  # noqa: F401 - fixture

SCRIPT = "python tf_cnn_benchmarks.py"
# Verbatim from the README (its two ``` blocks).
README_COMMANDS = [
    """python tf_cnn_benchmarks.py --num_gpus=1 --batch_size=32 --model=resnet50 --variable_update=parameter_server""",  # noqa: E501
    """python tf_cnn_benchmarks.py --data_format=NCHW --batch_size=256 \\
--model=resnet50 --optimizer=momentum --variable_update=replicated \\
--nodistortions --gradient_repacking=8 --num_gpus=8 \\
--num_epochs=90 --weight_decay=1e-4 --data_dir=${DATA_DIR} --use_fp16 \\
--train_dir=${CKPT_DIR}""",
]
RUNS = os.environ.get("TOWERTRAIN_README_RUNS") == "1"


def readme_flags(command, data_dir, ckpt_dir):
    """The command's flags, as a shell would pass them to `python -m towertrain`."""
    assert command.startswith(SCRIPT)
    text = command.replace("${DATA_DIR}", data_dir).replace("${CKPT_DIR}", ckpt_dir)
    text = text.replace("\\\n", "")  # the shell's line continuation
    return shlex.split(text[len(SCRIPT):])


def _skip_pending(args):
    """Skips naming the flags another branch defines (tfcnn_flags.PENDING)."""
    from absl import flags
    names = {re.match(r"--(?:no)?(\w+)", a).group(1) for a in args}
    missing = sorted(n for n in names & tfcnn_flags.PENDING if n not in flags.FLAGS)
    if missing:
        pytest.skip(f"{', '.join('--' + n for n in missing)}: category 1, not yet defined on "
                    "this branch (tfcnn_flags.PENDING)")


@pytest.fixture
def parse():
    from absl import flags
    from towertrain.commands import train
    from towertrain.config import flags as flags_lib
    flags_lib.define_flags()

    def run(args):
        _skip_pending(args)
        flags.FLAGS.unparse_flags()
        train.parse_flags(["towertrain", *args])
        return flags_lib.params_from_flags()
    yield run
    flags.FLAGS.unparse_flags()


def test_the_single_gpu_command_parses(parse):
    p = parse(readme_flags(README_COMMANDS[0], "unused", "unused"))
    assert (p.num_gpus, p.batch_size, p.model, p.variable_update) == (
        1, 32, "resnet50", "parameter_server")


def test_the_eight_gpu_imagenet_command_parses(parse, imagenet_dir, tmp_path):  # noqa: F811
    data_dir, ckpt_dir = str(imagenet_dir), str(tmp_path / "ckpt")
    p = parse(readme_flags(README_COMMANDS[1], data_dir=data_dir, ckpt_dir=ckpt_dir))
    assert (p.data_format, p.batch_size, p.model, p.optimizer, p.variable_update,
            p.num_gpus, p.num_epochs, p.weight_decay, p.data_dir, p.use_fp16,
            p.train_dir) == ("NCHW", 256, "resnet50", "momentum", "replicated", 8, 90, 1e-4,
                             data_dir, True, ckpt_dir)


@pytest.mark.skipif(not RUNS, reason="hours of ResNet-50 on a CPU; TOWERTRAIN_README_RUNS=1 "
                    "runs it (see the module docstring)")
def test_the_single_gpu_command_runs_on_cpu():
    args = readme_flags(README_COMMANDS[0], "unused", "unused") + ["--device=cpu"]
    done = helpers.cli.run_cli(*args, timeout=6 * 3600, check=True)
    assert re.search(r"^total images/sec: \d+\.\d\d$", done.stdout, re.MULTILINE)


@pytest.mark.skipif(not RUNS, reason="8 towers x 256 ResNet-50 images do not fit a CPU "
                    "machine's memory; TOWERTRAIN_README_RUNS=1 runs it")
def test_the_eight_gpu_command_runs_with_a_few_batches(imagenet_dir, tmp_path, parse):  # noqa: F811
    args = readme_flags(README_COMMANDS[1], data_dir=str(imagenet_dir),
                        ckpt_dir=str(tmp_path / "ckpt"))
    parse(args)  # skips while a flag is pending
    args = [a for a in args if not a.startswith("--num_epochs=")]
    done = helpers.cli.run_cli(*args, "--device=cpu", "--num_batches=2", timeout=6 * 3600,
                               check=True)
    assert re.search(r"^total images/sec: \d+\.\d\d$", done.stdout, re.MULTILINE)
