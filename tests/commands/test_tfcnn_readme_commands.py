"""tf_cnn_benchmarks' own README commands (scripts/tf_cnn_benchmarks/README.md
at towertrain.config.tfcnn_flags.SOURCE_COMMIT), copied verbatim apart from
the script name, run through `python -m towertrain`'s parser.

Running them is opt-in (TOWERTRAIN_README_RUNS=1, with `pytest -s` to see the
run's output):
- the first (ResNet-50, 1 tower x 32, 110 steps) on a CPU with --device=cpu
  added: 4 min 37 s at 13.4 images/sec and 3.9 GB on a 2-core AMD EPYC with
  AVX-512 (2026-11-25), far more on slower 2-core machines, so not in the
  15-minute suite;
- the second (8 towers x 256 ResNet-50 images, --use_fp16) only on a machine
  with GPUs: on a CPU, --use_fp16 is refused before any step (float16 is
  emulated there, ~100x slower; tests/recipe/test_native_precision.py), and
  2048 images of ResNet-50 activations in one step need ~100 GB of memory.
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


def _gpus():
    import tensorflow as tf
    return tf.config.list_physical_devices("GPU")


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


def test_the_eight_gpu_command_on_cpu_is_refused_before_any_step(imagenet_dir, tmp_path):  # noqa: F811
    """What a user sees who runs the second command with --device=cpu and a few
    batches: one line naming --use_fp16 and the way out, exit 2, no step."""
    args = readme_flags(README_COMMANDS[1], data_dir=str(imagenet_dir),
                        ckpt_dir=str(tmp_path / "ckpt"))
    args = [a for a in args if not a.startswith("--num_epochs=")]
    refused = helpers.cli.run_cli(*args, "--device=cpu", "--num_batches=2")
    assert refused.returncode == 2, refused.stdout[-2000:] + refused.stderr[-2000:]
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("towertrain: error: --use_fp16: float16 is emulated on cpu"), last
    assert "--allow_emulated_precision" in last and "images/sec" not in refused.stdout
    assert not (tmp_path / "ckpt").exists()  # --train_dir: nothing created


@pytest.mark.skipif(not RUNS, reason="minutes to hours of ResNet-50 on a CPU; "
                    "TOWERTRAIN_README_RUNS=1 runs it (see the module docstring)")
def test_the_single_gpu_command_runs_on_cpu():
    args = readme_flags(README_COMMANDS[0], "unused", "unused") + ["--device=cpu"]
    done = helpers.cli.run_cli(*args, timeout=6 * 3600, check=True)
    print(done.stdout)  # the run's record, shown with pytest -s
    assert re.search(r"^total images/sec: \d+\.\d\d$", done.stdout, re.MULTILINE)


@pytest.mark.skipif(not (RUNS and _gpus()), reason="needs GPUs: on a CPU --use_fp16 is "
                    "refused (emulated float16) and 8 x 256 ResNet-50 images need ~100 GB; "
                    "TOWERTRAIN_README_RUNS=1 runs it on a GPU machine")
def test_the_eight_gpu_command_runs_with_a_few_batches(imagenet_dir, tmp_path, parse):  # noqa: F811
    args = readme_flags(README_COMMANDS[1], data_dir=str(imagenet_dir),
                        ckpt_dir=str(tmp_path / "ckpt"))
    parse(args)  # skips while a flag is pending
    args = [a for a in args if not a.startswith("--num_epochs=")]
    done = helpers.cli.run_cli(*args, "--num_batches=2", timeout=6 * 3600,
                               check=True)
    print(done.stdout)
    assert re.search(r"^total images/sec: \d+\.\d\d$", done.stdout, re.MULTILINE)
