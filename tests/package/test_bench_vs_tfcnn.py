"""bench/bench_vs_tfcnn.py's towertrain side: --same_network trains the CIFAR
ResNet with tf_cnn_benchmarks' parameter-free shortcuts, through the CLI."""
import argparse
import subprocess

from helpers import bench_scripts

vs_tfcnn = bench_scripts.load("bench_vs_tfcnn")


def _args(**given):
    args = dict(model="resnet20", batch_size=2, num_batches=1, num_warmup=1,
                same_network=False)
    args.update(given)
    return argparse.Namespace(**args)


def test_default_is_the_registered_model():
    command = vs_tfcnn.towertrain_command(_args())
    assert command[1:3] == ["-m", "towertrain"] and "--model=resnet20" in command


def test_same_network_runs_the_pad_variant_through_the_cli():
    command = vs_tfcnn.towertrain_command(_args(same_network=True))
    assert command[1].endswith("bench/towertrain_pad_resnet.py")
    assert command[-1] == "--model=resnet20_pad"  # the last --model wins
    assert "resnet20_v2" in vs_tfcnn.PAD_MODELS and "alexnet_cifar" not in vs_tfcnn.PAD_MODELS
    out = subprocess.run(command + ["--device=cpu", "--num_gpus=1"], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "Model:       resnet20_pad" in out.stdout
    assert "total images/sec" in out.stdout
